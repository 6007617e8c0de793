//! One operation on N nodes: the coordinator (`coordinator.rs`: acquire,
//! extend, release, the fencing rounds, unwind), the one fan-out that sends
//! an operation to every node and collects votes to a decision
//! (`fan_out.rs`), settling a decision and its votes into a result
//! (`settle.rs`), an operator's force-release (`force_release.rs`), and the drop guard that makes it cancel safe
//! (`drop_guard.rs`). The rules it applies are `protocol/`'s; this is the
//! part that runs them on the nodes, with time and tasks.
//!
//! May import: `node/` (the N masters), `wait/` (a release wakes this
//! process's waiters at once), `protocol/`, and the root vocabulary.
//!
//! Must never import: `lease/`, `redlock.rs`, `kinds/`, `admin/`,
//! `setup/`: a coordinator knows operations, not holders.

pub(crate) mod coordinator;
pub(crate) mod drop_guard;
mod fan_out;
mod force_release;
mod settle;
