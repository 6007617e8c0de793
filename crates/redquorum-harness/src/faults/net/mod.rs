//! The fault proxies: a TCP proxy in front of each node per client group,
//! the network faults a test turns on and off in the path between the
//! clients and the nodes. [`FaultProxy`] (`proxy.rs`) stands in front of
//! one node; its forwarding and [`ProxyMode`] are in `forward.rs`, what
//! the proxies see of scripts in `script_tally.rs`, which calls their
//! script flushes aim at in `aim.rs` and their own connection to the node
//! for those flushes in `side.rs`, and the batch answers they hold until
//! the client's next call has gone out in `overtake.rs`; per-group [`Proxies`] in
//! `proxies.rs`.
//!
//! May import: `nodes` (per-group proxies stand in front of a
//! [`Cluster`](crate::Cluster)'s nodes) and the crate root. Must never
//! import the rest of `faults/`: the nemesis drives the proxies, not the
//! other way round, and a proxy knows bytes, not fault kinds or locks.

mod aim;
mod forward;
mod overtake;
mod proxies;
mod proxy;
mod script_body;
mod script_tally;
mod side;

pub use forward::ProxyMode;
pub(crate) use overtake::OVERTAKE_WITHIN;
pub use proxies::{NodeProxies, Proxies};
pub use proxy::FaultProxy;
pub use script_tally::ScriptCounts;
