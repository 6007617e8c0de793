//! Layer 4, faults: what goes wrong on purpose during a run, and the record
//! of it.
//!
//! What lives here: [`FaultKind`] (`kind.rs`: the faults by name, imported
//! by the fault log and the nemesis alike), the fault proxies in front of
//! the nodes ([`FaultProxy`] in `proxy.rs`, its forwarding and
//! [`ProxyMode`] in `forward.rs`, what they see of scripts in
//! `script_tally.rs` and which calls their script flushes aim at in `aim.rs`, per-group [`Proxies`] in `proxies.rs`),
//! client-group pauses ([`ClientPauser`]), the [`Nemesis`] (`nemesis.rs`,
//! `nemesis_config.rs`, its loop in `rounds.rs`, each fault's action in
//! `strike.rs`, and which nodes a fence-loss may strike in
//! `clock_leads.rs`; on cluster masters, `shard_rounds.rs` and `shard_strike.rs`:
//! slot migrations and failovers) and the [`FaultLog`] of what struck where
//! and when.
//!
//! What it is for: breaking a run in the ways Redlock's assumptions allow
//! (and a few they do not), so the checker has something to judge.
//!
//! May import: `nodes` (the nemesis kills, pauses and shifts the clocks of
//! a [`Cluster`](crate::Cluster)'s nodes, and moves the slots and promotes
//! the replicas of a [`ShardedCluster`](crate::ShardedCluster)'s; the
//! proxies stand in front of single servers) and the crate root. Must never import `evidence`, `check` or
//! `run`.

mod aim;
mod client_group;
mod clock_leads;
mod fault_log;
mod forward;
mod kind;
mod nemesis;
mod nemesis_config;
mod proxies;
mod proxy;
mod rounds;
mod script_tally;
mod shard_rounds;
mod shard_strike;
mod strike;

pub use client_group::ClientPauser;
pub(crate) use client_group::serve_pauses;
pub use fault_log::{FaultEvent, FaultLog};
pub use forward::ProxyMode;
pub use kind::FaultKind;
pub use nemesis::Nemesis;
pub use nemesis_config::NemesisConfig;
pub use proxies::{NodeProxies, Proxies};
pub use proxy::FaultProxy;
pub use script_tally::ScriptCounts;
