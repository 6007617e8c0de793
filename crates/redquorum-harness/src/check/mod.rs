//! Layer 2, check: the checker, pure logic over what a run recorded.
//!
//! What lives here: [`check`] / [`check_evidence`] (`checker.rs`; the
//! unit tests of it, `forced.rs` and `operator.rs` are in `tests/`), the [`Evidence`] it reads and the
//! [`Verdict`] it answers (`verdict.rs`) of [`Violation`]s
//! (`violation/`; how each reads, `violation/text.rs`), each further rule on the sessions in its own file
//! (`sharing.rs`: shared holds and fencing order; `lock_delay.rs`;
//! `operator.rs`; `forced.rs`: the overlaps a
//! force-release excuses; `revival.rs`; `notices.rs`: a kept holder
//! hears of a force-release or an ask from its lock in time), the rules
//! on what the nodes held, judged from the key audit, in `audit/` (keys
//! left after a release or unwind, holds removed by another or come back,
//! the premise that a majority backs every believed hold, and what a node
//! showed of it, [`NodeBacking`]; the token premise, that a quorum's fence
//! counters hold every token handed out, [`CounterShown`]), and [`Exercised`] (`exercised.rs`):
//! whether a run tested anything at all; `by_time.rs` finds the faults
//! and calls under way around a time without scanning them all.
//!
//! What it is for: judging a history, live or read back from a file, the
//! same way; no I/O, no clock, no randomness, so every rule has unit tests
//! on planted histories.
//!
//! May import: `evidence` (the records it judges), `faults` (a fault's
//! kind and interval excuse what it causes) and the crate root. Must never
//! import `nodes` (the checker does not touch Redis) or `run`. Inside,
//! `audit/` imports the checker's frame (`verdict.rs`, `violation/`)
//! and `lock_delay.rs`'s clock allowances, never `checker.rs`, which
//! runs its rules.

mod audit;
mod by_time;
mod checker;
mod exercised;
mod forced;
mod lock_delay;
mod notices;
mod operator;
mod revival;
mod sharing;
mod verdict;
mod violation;

pub use audit::{CounterShown, NodeBacking};
pub use checker::{check, check_evidence};
pub use exercised::{Exercised, HandOvers};
pub use lock_delay::{LockDelayRule, vanished_holders};
pub(crate) use notices::KEPT_SETTLED;
pub use notices::{kept_holders_asked, kept_holders_ousted};
pub use operator::{OperatorFault, inspections_naming_holders, ousted_holders};
pub use verdict::{Evidence, Verdict};
pub use violation::Violation;
