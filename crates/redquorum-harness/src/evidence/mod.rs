//! Layer 3, evidence: what a run records for the checker, beside the
//! fault log.
//!
//! What lives here: the [`History`] of [`Session`]s (`history.rs`,
//! `session/`; a hold of a set as a hold of each name in
//! `session/cover.rs`, its report line in `session/display.rs`; how each ended and how its holder behaved in
//! `outcome.rs`; the [`Share`] its hold declared in `share.rs`), the
//! [`KeyAudit`] (lock keys read on the nodes during the run, `audit/`), the leak
//! check after it ([`leaks_after`], [`LeakedKey`]), the operator's calls
//! ([`OperatorLog`], `operator_log.rs`), the holds a lock keeps alive
//! while they run, for the operator to oust or ask ([`KeptHolds`],
//! `kept_holds.rs`), and the machine's wall clock stepping
//! ([`HostClockStep`], `host_clock.rs`).
//!
//! What it is for: plain, serializable records that the checker judges
//! and a history file keeps; recording them is the only I/O here (the
//! audit and the leak check read the nodes).
//!
//! May import: `nodes` (to read keys), `faults` and the crate root. Must
//! never import `check` or `run`.

mod audit;
mod history;
mod host_clock;
mod kept_holds;
mod leaks;
mod operator_log;
mod outcome;
mod runtime_lag;
mod session;
mod share;

pub use audit::{
    AuditConfig, AuditNudge, AuditRead, AuditRound, Backing, CounterTrack, HoldTrack, KeyAudit,
    KeyLife, LockKeys, SAME_EXPIRY, Seen,
};
pub use history::History;
pub use host_clock::{HostClockStep, STEP_RECORDED};
pub use kept_holds::{KeptHold, KeptHolds};
pub(crate) use leaks::sharded_lock_keys_after;
pub use leaks::{LeakedKey, find_leaks, leaks_after, lock_keys_after};
pub(crate) use operator_log::OPERATOR_GROUP;
pub use operator_log::{OperatorAction, OperatorCall, OperatorLog};
pub use outcome::{Dropped, Holder, Outcome};
pub use runtime_lag::RuntimeLag;
pub use session::{Extension, Session};
pub use share::Share;
