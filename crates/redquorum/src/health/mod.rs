//! Node health, as rules and data: what each master says about itself
//! ([`NodeHealth`], [`Role`], [`Durability`], `node_health.rs`), the oldest
//! servers the scripts run on ([`OLDEST_SERVER`], `oldest_server.rs`), why
//! its vote may be refused ([`Ineligible`], `ineligible.rs`), which votes
//! count (`eligibility.rs`: replicas, a non-durable node within its delayed
//! restart, an old server) and the node-clock rule (`clock_watch.rs`). It
//! never talks to a node: the probes in `node/probe.rs` feed it.
//!
//! May import: `node_id.rs`, `sync.rs`, `mutants.rs`.
//!
//! Must never import: anything else. `outcome.rs` and `metrics.rs` import
//! [`Ineligible`] from here, so this sits below them.

mod clock_watch;
pub(crate) mod eligibility;
pub(crate) mod ineligible;
pub(crate) mod node_health;
pub(crate) mod oldest_server;

pub use ineligible::Ineligible;
pub use node_health::{Durability, NodeHealth, Role};
pub use oldest_server::{OLDEST_CLUSTER_SERVER, OLDEST_SERVER};
