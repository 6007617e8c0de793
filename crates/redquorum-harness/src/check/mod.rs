//! Layer 2, check: the checker, pure logic over what a run recorded.
//!
//! What lives here: [`check`] / [`check_evidence`] (`checker.rs`, its
//! tests in `checker_tests.rs`), the [`Evidence`] it reads and the
//! [`Verdict`] it answers (`verdict.rs`) of [`Violation`]s
//! (`violation.rs`), each further rule in its own file (`sharing.rs`:
//! shared holds and fencing order; `lock_delay.rs`; `operator.rs`, tests
//! in `operator_tests.rs`; `revival.rs`; `orphan.rs`: keys left after a release or
//! unwind; `hold_life.rs`: holds removed by
//! another, or come back, tests in `hold_life_tests.rs`; `unbacked.rs`:
//! the premise, a majority backing every believed hold, tests in
//! `unbacked_tests.rs`; what a node showed of the hold, [`NodeBacking`] in
//! `node_backing.rs`), and [`Exercised`]: whether a run
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
mod hold_life;
mod lock_delay;
mod node_backing;
mod operator;
mod orphan;
mod revival;
mod sharing;
mod unbacked;
mod verdict;
mod violation;

pub use checker::{check, check_evidence};
pub use exercised::Exercised;
pub use lock_delay::{LockDelayRule, vanished_holders};
pub use node_backing::NodeBacking;
pub use operator::{OperatorFault, inspections_naming_holders, ousted_holders};
pub use verdict::{Evidence, Verdict};
pub use violation::Violation;
