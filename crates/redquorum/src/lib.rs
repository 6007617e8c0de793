//! High-safety distributed locks on N independent Redis masters (Redlock).
//!
//! redquorum sends each lock operation to **all N masters at once**, decides
//! as soon as a majority (`N/2 + 1`) has answered either way, and grants the
//! lock only while it is still valid after subtracting the time spent and a
//! clock-drift allowance. A failed attempt is unwound on every node,
//! including nodes that have not answered yet.
//!
//! # What is guaranteed
//!
//! Two holders never hold the same resource within their validity windows,
//! provided that (a) clocks drift at most `drift_factor`, (b) a holder stops
//! using the lock by [`Lock::deadline`], and (c) a node does not forget a key
//! it granted (AOF with `appendfsync always`, or a restart delayed by at least
//! the largest TTL). See `docs/safety.md`.
//!
//! # Quick start
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let cluster = redquorum_harness::Cluster::start(5)?;
//! # let urls = cluster.urls();
//! use redquorum::Redlock;
//!
//! let redlock = Redlock::builder()
//!     .nodes(&urls) // five independent masters: "redis://host:port", ...
//!     .build()?;
//!
//! let lock = redlock.lock("orders:user-42").await?;
//! // ... the critical section; stop using it by lock.deadline() ...
//! lock.release().await?;
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! - `builder.rs`: [`RedlockBuilder`], validation into [`BuildError`].
//! - `redlock.rs`: [`Redlock`], `try_lock` and `lock` (retry with backoff).
//! - `options.rs`: [`LockOptions`].
//! - `quorum.rs`: fan-out to all nodes, early decision, unwind.
//! - `tally.rs`: the pure quorum decision; `validity.rs`: the lease maths.
//! - `node.rs`: one master's client and script calls; [`NodeId`].
//! - `notify.rs`: release notifications that wake `lock()` waiters.
//! - `scripts.rs` and `scripts/*.lua`: the owner-checked scripts.
//! - `lock.rs`: [`Lock`]; `token.rs`: [`OwnerToken`].
//! - `watchdog.rs`: lease extension task, [`LeaseWatch`] and the lost-lock signal.
//! - `scoped.rs`: [`Redlock::with_lock`], run a future under auto-extension.
//! - `reentrant.rs`: [`ReentrantOwner`], [`ReentrantLock`]; `rwlock.rs`:
//!   [`ReadLock`], [`WriteLock`]; `any_of.rs`: `Redlock::lock_any`;
//!   `held.rs`: the lease core they share (see `docs/locks.md`).
//! - `outcome.rs`: [`NodeOutcome`], [`Outcomes`]; `error.rs`: errors.
//! - `health.rs`: node probes and the delayed-restart rule; [`NodeHealth`].
//! - `tls.rs`: custom TLS trust roots; `observe.rs`: metric names and recording.
//! - `fence.rs`: [`FenceToken`] and the two-round fencing protocol;
//!   `fenced_write.rs`: [`FencedWriter`], the check on a Redis-backed resource.
//! - `mutants.rs`: planted bugs for testing the torture checker (feature
//!   `mutants`, off by default; compiled away without it).

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![deny(rustdoc::broken_intra_doc_links)]

mod any_of;
mod backoff;
mod batch;
mod builder;
mod error;
mod fence;
mod fenced_write;
mod health;
mod held;
mod lock;
#[cfg(feature = "mutants")]
pub mod mutants;
#[cfg(not(feature = "mutants"))]
#[allow(dead_code, unreachable_pub)]
mod mutants;
mod node;
mod notify;
mod observe;
mod options;
mod outcome;
mod quorum;
mod redlock;
mod reentrant;
mod rwlock;
mod scoped;
mod scripts;
mod sync;
mod tally;
mod tls;
mod token;
mod validity;
mod watchdog;

pub use builder::RedlockBuilder;
pub use error::{BuildError, Error, FencedWriteError, NodeError};
pub use fence::FenceToken;
pub use fenced_write::FencedWriter;
pub use health::{Durability, Ineligible, NodeHealth, Role};
pub use lock::Lock;
pub use node::NodeId;
pub use options::{LockOptions, WatchdogOptions};
pub use outcome::{NodeOutcome, Outcomes};
pub use redlock::Redlock;
pub use reentrant::{ReentrantLock, ReentrantOwner};
pub use rwlock::{ReadLock, WriteLock};
pub use token::OwnerToken;
pub use watchdog::{AtRisk, LeaseWatch, LostReason};

// The guides' Rust examples compile as doc tests too.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/getting-started.md")]
struct GettingStartedGuide;
#[cfg(doctest)]
#[doc = include_str!("../../../docs/operations.md")]
struct OperationsGuide;
