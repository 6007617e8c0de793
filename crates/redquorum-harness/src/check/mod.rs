//! Check: the checker, pure logic over what a run recorded.
//!
//! What lives here: [`check`] / [`check_evidence`] and the [`Verdict`] of
//! [`Violation`]s, each rule in its own file (sharing, the lock-delay, an
//! operator's promises, revived leases), and [`Exercised`]: whether a run
//! tested anything at all.
//!
//! What it is for: judging a history, live or read back from a file, the
//! same way; no I/O, no clock, no randomness, so every rule has unit tests
//! on planted histories.
//!
//! May import: `evidence` (the records it judges), `faults` (a fault's
//! kind and interval excuse what it causes) and the crate root. Must never
//! import `nodes` (the checker does not touch Redis) or `run`.

mod checker;
mod exercised;
mod lock_delay;
mod operator;
mod revival;
mod sharing;
mod verdict;
mod violation;

pub use checker::{check, check_evidence};
pub use exercised::Exercised;
pub use lock_delay::{LockDelayRule, vanished_holders};
pub use operator::{OperatorFault, inspections_naming_holders, ousted_holders};
pub use verdict::{Evidence, Verdict};
pub use violation::Violation;
