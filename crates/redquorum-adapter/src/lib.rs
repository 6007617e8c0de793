//! redquorum behind the harness's one [`Locker`] trait: the one adapter of
//! the library, which the benchmarks (`redquorum-benches`), `redquorum
//! bench`, `redquorum torture` and the scenario tests drive it through, so
//! that each drives exactly the same calls.
//!
//! # Layout
//!
//! - `kinds.rs`: [`KindLocker`] over a [`LockKind`] (`lock_kind.rs`): every
//!   lock kind (plain, reentrant, write, read, any-of, all-of, semaphore,
//!   election) through its blocking acquire; [`HeldKind`], what it holds.
//! - `mixed.rs`: [`MixedLocker`], every kind at once on the same names (the
//!   torture's mixed workload).
//! - `torture_build.rs`: [`torture_redlock`], the `Redlock` a torture run's
//!   clients build when they are all alike.
//! - `votes.rs`: [`wait_for_votes`]; `refusal.rs`: [`refusal_kind`] and the
//!   commands redquorum sends ([`REDQUORUM_COMMANDS`]).

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod kinds;
mod lock_kind;
mod mixed;
mod refusal;
mod torture_build;
mod votes;

pub use kinds::{HeldKind, KindLocker};
pub use lock_kind::LockKind;
pub use mixed::{MIXED_PERMITS, MixedLocker};
pub use redquorum_harness::{Grant, Locker, Refusal};
pub use refusal::{REDQUORUM_COMMANDS, refusal_kind};
pub use torture_build::torture_redlock;
pub use votes::wait_for_votes;
