//! High-safety distributed locks on N independent Redis masters (Redlock).
//!
//! redquorum sends each lock operation to **all N masters at once**, decides
//! as soon as a majority (`N/2 + 1`) has answered either way, and grants the
//! lock only while it is still valid after subtracting the time spent and a
//! clock-drift allowance. A failed attempt is unwound on every node,
//! including nodes that have not answered yet.
//!
//! # What is guaranteed
//!
//! Two holders never hold the same resource within their validity windows,
//! provided that (a) clocks drift at most `drift_factor`, (b) a holder stops
//! using the lock by [`Lock::deadline`], and (c) a node does not forget a key
//! it granted (AOF with `appendfsync always`, or a restart delayed by at least
//! the largest TTL). See `docs/safety.md`.
//!
//! # Quick start
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let cluster = redquorum_harness::Cluster::start(5)?;
//! # let urls = cluster.urls();
//! use redquorum::Redlock;
//!
//! let redlock = Redlock::builder()
//!     .nodes(&urls) // five independent masters: "redis://host:port", ...
//!     .build()?;
//!
//! let lock = redlock.lock("orders:user-42").await?;
//! // ... the critical section; stop using it by lock.deadline() ...
//! lock.release().await?;
//! # Ok(()) }
//! ```
//!
//! # Glossary
//!
//! - **claim**: one hold asked for, as data (kind, resource, keys, token,
//!   TTL) and the operations that take, renew and give it back
//!   (`protocol/claim.rs`).
//! - **grant**: a quorum's yes to a claim's acquire: the deadline, and the
//!   fencing proposal (`quorum/coordinator.rs`).
//! - **hold**: a granted claim while it lasts: its entry in the lock record
//!   on each node, and `lease/held.rs` in this process.
//! - **lock record**: what a resource's lock key holds on each node, one per
//!   resource whatever the kind: a plain hold's string (its token), or a
//!   hash of every hold on it (`protocol/scripts/ops/`).
//! - **lease**: how long a hold may be used: its deadline as extensions
//!   move it, and its loss (`lease/state.rs`; [`LeaseWatch`] shows it).
//!
//! # Layout
//!
//! One engine: every lock kind is a thin type over one hold, one quorum
//! fan-out and one node entry point that batches any operation. The source
//! is laid out by layer, top to bottom; a layer imports only from layers
//! below it, and each folder's `mod.rs` says what it holds and what it may
//! and must never import (docs/architecture.md has the drawing and the path
//! of one `lock()` call; `tests/tests/layers` checks those rules, kept as a
//! table in its `layers.txt`, against the imports):
//!
//! 1. `kinds/`: the lock types and the `Redlock` methods that take them.
//! 2. `admin/` (inspect, list, force-release), `setup/` (builder, config,
//!    environment, TLS), `shutdown.rs`, `fenced_write.rs`.
//! 3. `redlock/`: the handle, [`Redlock`], and the handles derived from one.
//! 4. `lease/`: a held lock's life: extend, release, watchdog, registry.
//! 5. `quorum/`: one operation on N nodes: fan-out, decision, unwind; and
//!    the arithmetic it runs: votes, tally, validity, the fencing
//!    proposal's choice.
//! 6. `wait/` (the retry loop, local waiters, release notifications) and
//!    `node/` (connections, group commit, probes, the N masters).
//! 7. The public vocabulary, each importing only the ones after it:
//!    `metrics.rs`, `attempt.rs` (what the attempt observer sees),
//!    `options.rs`, then `error/`: `build_error.rs`,
//!    `url_problem.rs` (what is wrong with a node URL), and its `mod.rs`,
//!    the runtime [`Error`].
//! 8. `protocol/`: the protocol as data and the wire, no I/O: claims,
//!    operations (and the cheaper forms of one alone on a connection,
//!    `alone.rs`), keys, the lock script (`scripts/ops/`), tokens.
//! 9. `outcome.rs`, then `node_error.rs`: what each node answered.
//! 10. `health/`: node health as rules and data (never talks to a node).
//! 11. `node_id.rs`, `sync.rs`, and `mutants/` (`select.rs`: which one is on; the patches
//!     are `crates/redquorum/mutants/`): planted bugs for testing
//!     the torture checker (`--cfg redquorum_mutants`, off by default; compiled
//!     away without it).

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![deny(rustdoc::broken_intra_doc_links)]

// The layers, top to bottom (the crate doc's Layout): each group of
// modules imports only from the groups after it.
mod kinds;

mod admin;
mod fenced_write;
mod setup;
mod shutdown;

mod redlock;

mod lease;

mod quorum;

mod node;
mod wait;

mod attempt;
mod metrics;
mod options;

mod error;

mod protocol;

mod outcome;

mod node_error;

mod health;

#[cfg(redquorum_mutants)]
pub mod mutants;
#[cfg(not(redquorum_mutants))]
#[allow(dead_code, unreachable_pub)]
mod mutants;
mod node_id;
mod sync;

pub use admin::{HoldView, Inspection, NodeView};
pub use attempt::Attempt;
pub use error::{BuildError, Error, FencedWriteError, UrlProblem};
pub use fenced_write::FencedWriter;
pub use health::{Durability, Ineligible, NodeHealth, OLDEST_CLUSTER_SERVER, OLDEST_SERVER, Role};
pub use kinds::{
    Election, Leader, Leadership, Lock, MultiLock, Permit, ReadLock, ReentrantLock, ReentrantOwner,
    Semaphore, WriteLock,
};
pub use lease::{AtRisk, LeaseWatch, LostReason, Ticket, TicketError};
pub use node_error::NodeError;
pub use node_id::NodeId;
pub use options::{LockOptions, WatchdogOptions};
pub use outcome::{NodeOutcome, Outcomes};
pub use protocol::{FenceToken, OwnerInfo, OwnerToken};
pub use redlock::Redlock;
pub use setup::{RedlockBuilder, RedlockConfig};

/// The Redis client redquorum is built on, re-exported because its types
/// appear in this API: the `source` of [`BuildError::InvalidUrl`] and
/// [`NodeError`], and the [`Config`](fred::prelude::Config) taken by
/// [`RedlockBuilder::node_config`]. Use this path rather than a `fred`
/// dependency of your own, so the versions always match.
pub use fred;

// The guides' Rust examples compile as doc tests too.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/getting-started.md")]
struct GettingStartedGuide;
#[cfg(doctest)]
#[doc = include_str!("../../../docs/operations.md")]
struct OperationsGuide;
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadme;

/// The plain release's own script (`protocol/scripts/plain_release.lua`),
/// which a release alone on a single server's connection runs, for the
/// benchmarks' floor. Not part of the API: it may change in any release.
#[doc(hidden)]
pub const PLAIN_RELEASE_SCRIPT_FOR_BENCHMARKS: &str = node::script::PLAIN_RELEASE_BODY;
