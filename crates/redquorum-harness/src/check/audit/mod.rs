//! The rules on what the nodes held, judged from the key audit (the lock
//! keys read on every node during the run) against the sessions: no key
//! lives on after its owner's attempt was unwound or its lease released
//! (`orphan.rs`, `orphan-key`, tests in `orphan/tests.rs`; the faults that
//! excuse it, in `excuse.rs`, which the inspection's promise shares; how
//! long a loaded machine held up a removal's path, in `orphan/path_lag.rs`,
//! tests in `orphan/lag_tests.rs`); nobody but its owner takes a live hold off a
//! node, and a hold gone from a node does not come back (`hold_life.rs`,
//! tests in `hold_life_tests/`); and the premises, in `premise/`: while a
//! client believes it holds, a majority of the nodes back it
//! (`unbacked.rs`, tests in `unbacked_tests.rs`), and what a node showed
//! of that hold ([`NodeBacking`], `node_backing.rs`); a holder's fencing
//! token is held by a quorum's fence counters (`token_backing.rs`, tests
//! in `token_backing_tests.rs`), and what a node's counter showed
//! ([`CounterShown`], `counter_shown.rs`); each node whose vote a grant
//! counted holds it (`vote_backing.rs`, tests in `vote_backing_tests.rs`).
//!
//! May import: the checker's frame (`verdict.rs`, `violation/`),
//! `lock_delay.rs`'s clock allowances, `evidence` and `faults`. Must never
//! import `checker.rs` (it runs these rules) or the other session rules
//! (`sharing.rs`, `operator.rs`, `revival.rs`).

pub(super) mod excuse;
pub(super) mod hold_life;
pub(super) mod orphan;
mod premise;

pub use premise::{CounterShown, NodeBacking};
pub(super) use premise::{token_backing, unbacked, vote_backing};
