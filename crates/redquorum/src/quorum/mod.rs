//! One operation on N nodes: the coordinator (`coordinator.rs`: acquire,
//! extend, release, the fencing rounds, unwind), the one fan-out that sends
//! an operation to every node and collects votes to a decision
//! (`fan_out.rs`), settling a decision and its votes into a result
//! (`settle.rs`), the hand-off window a release holds open for the waiter
//! it wakes (`hand_off_window.rs`), an operator's force-release (`force_release.rs`), and the
//! drop guard that makes it cancel safe (`drop_guard.rs`), listening on a
//! lock's announcements (`listen.rs`: losses, asks, releases); and the pure
//! arithmetic they run, no I/O: a node's answer read as a vote
//! (`vote.rs`), the quorum size and the decision (`tally.rs`), the lease
//! maths (`validity.rs`) and the fencing proposal's choice
//! (`fence_choice.rs`). `protocol/` says what an operation is; this says
//! what the nodes' answers to it add up to, and runs it.
//!
//! May import: `node/` (the N masters), `wait/` (a release wakes this
//! process's waiters at once), `protocol/`, and the root vocabulary.
//! `node/` and `wait/` need the quorum size too: `setup/` hands them
//! `tally::quorum` as a function.
//!
//! Must never import: `lease/`, `redlock/`, `kinds/`, `admin/`,
//! `setup/`: a coordinator knows operations, not holders.

pub(crate) mod coordinator;
pub(crate) mod drop_guard;
mod fan_out;
mod fence_choice;
mod force_release;
mod hand_off_window;
mod listen;
mod settle;
pub(crate) mod tally;
mod validity;
mod vote;
