//! Layer 4, faults: what goes wrong on purpose during a run, and the record
//! of it.
//!
//! What lives here: [`FaultKind`] (`kind.rs`: the faults by name, imported
//! by the fault log and the nemesis alike), the fault proxies in front of
//! the nodes (`net/`: [`FaultProxy`], its forwarding and [`ProxyMode`],
//! what the proxies see of scripts, per-group [`Proxies`]), client-group
//! pauses ([`ClientPauser`], `client_group.rs`), the [`Nemesis`]
//! (`nemesis/`: its configuration, its loop, each fault's action, which
//! nodes a fence-loss may strike; on cluster masters, slot migrations and
//! failovers) and the [`FaultLog`] of what struck where and when
//! (`fault_log.rs`).
//!
//! What it is for: breaking a run in the ways Redlock's assumptions allow
//! (and a few they do not), so the checker has something to judge.
//!
//! May import: `nodes` (the nemesis kills, pauses and shifts the clocks of
//! a [`Cluster`](crate::Cluster)'s nodes, and moves the slots and promotes
//! the replicas of a [`ShardedCluster`](crate::ShardedCluster)'s; the
//! proxies stand in front of single servers) and the crate root. Must
//! never import `evidence`, `check` or `run`. Inside, `net/` imports
//! nothing else of this folder; `nemesis/` imports the rest.

mod client_group;
mod fault_log;
mod kind;
mod nemesis;
mod net;

pub use client_group::ClientPauser;
pub(crate) use client_group::serve_pauses;
pub use fault_log::{FaultEvent, FaultLog};
pub use kind::FaultKind;
pub use nemesis::{Nemesis, NemesisConfig};
pub use net::{FaultProxy, NodeProxies, Proxies, ProxyMode, ScriptCounts};
