//! Evidence: what a run records for the checker, beside the fault log.
//!
//! What lives here: the [`History`] of [`Session`]s (what each client did,
//! on one clock), the [`KeyAudit`] (lock keys read on the nodes during the
//! run), and the leak check after it ([`leaks_after`]).
//!
//! What it is for: plain, serializable records that the checker judges
//! and a history file keeps; recording them is the only I/O here (the
//! audit and the leak check read the nodes).
//!
//! May import: `nodes` (to read keys), `faults` and the crate root. Must
//! never import `check` or `run`.

mod audit;
mod history;
mod leaks;

pub use audit::{AuditConfig, KeyAudit, KeyLife, LockKeys};
pub use history::{Dropped, Extension, History, Holder, Outcome, Session};
pub use leaks::{find_leaks, leaks_after, lock_keys_after};
