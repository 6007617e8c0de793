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
//! One engine: every lock kind is a thin type over one lease core, one
//! quorum fan-out and one node entry point that batches any operation.
//!
//! - The handle: `redlock.rs` ([`Redlock`]), `shutdown.rs`
//!   ([`Redlock::shutdown`]), `builder.rs`
//!   ([`RedlockBuilder`], validation into [`BuildError`], `build_error.rs`),
//!   `builder_nodes.rs`
//!   (its methods that add masters), `node_source.rs` (a builder's nodes:
//!   URLs or fred configs), `config.rs`
//!   ([`RedlockConfig`]: settings as data, deserialisable with the `serde`
//!   feature), `env.rs` (the `REDQUORUM_*` variables, [`Redlock::from_env`]),
//!   `options.rs` ([`LockOptions`], [`WatchdogOptions`]).
//! - The lock kinds, thin types over the lease core: `lock.rs` ([`Lock`],
//!   `try_lock`, `lock`), `rwlock.rs` ([`ReadLock`], [`WriteLock`]),
//!   `reentrant.rs` ([`ReentrantOwner`], [`ReentrantLock`]), `any_of.rs`
//!   (`lock_any`), `multi_lock.rs` ([`MultiLock`], `lock_all`),
//!   `semaphore.rs` ([`Semaphore`], [`Permit`]), `election.rs`
//!   ([`Election`]) with `leadership.rs` ([`Leadership`]) and `leader.rs`
//!   ([`Leader`], who leads),
//!   `scoped.rs`
//!   ([`Redlock::with_lock`]); `lock_api.rs` writes their shared methods
//!   once.
//! - The lease core: `held.rs` (extend, release, fencing write-back, drop);
//!   `lease.rs` (the lease state, [`LostReason`], [`AtRisk`]) and
//!   `lease_watch.rs` ([`LeaseWatch`]: `lost`, `at_risk`); `watchdog.rs` (the
//!   extension task); `registry.rs` (live holds, for `shutdown`).
//! - What a kind sends: `claim.rs` (a hold as data: the operations of each
//!   kind), `keys.rs` (the key layout), `op.rs` (an operation as data),
//!   `scripts/ops.lua` (every operation of every kind, each in its own pcall).
//! - The coordinator: `quorum.rs` (the operations, unwind), `fan_out.rs`
//!   (the one fan-out: send to every node, collect votes to a decision),
//!   `vote.rs` (a node's answer read as a vote), `tally.rs` (the decision),
//!   `settle.rs` (a decision and its votes into a result),
//!   `validity.rs` (the lease maths), `fence.rs` ([`FenceToken`], the token
//!   choice), `drop_guard.rs` (cancel safety).
//! - Waiting: `wait.rs` (the one wait loop), `waiters.rs` (lines of local
//!   waiters), `notify.rs` (release notifications), `backoff.rs`.
//! - The nodes: `nodes.rs` (the N masters, their background tasks, the vote
//!   rules across nodes), `node.rs` (one master), `node_id.rs` ([`NodeId`]),
//!   `connection.rs` (URLs, lock-safe fred settings), `link.rs` (up, or
//!   down and why: a down node is skipped at once), `batcher.rs` (group
//!   commit, NOSCRIPT handling; tests in `batcher_tests.rs`) over `queue.rs`
//!   (its queue, as pure state),
//!   `script.rs` (the script cache), `probe.rs` (health probes),
//!   `eligibility.rs` (probe results and which votes count), `clock_watch.rs`
//!   (node clocks against the local one), `health.rs` ([`NodeHealth`]),
//!   `ineligible.rs` ([`Ineligible`]), `tls.rs` (custom trust roots).
//! - Results: `outcome.rs` ([`NodeOutcome`], [`Outcomes`]), `node_error.rs`
//!   ([`NodeError`]), `error.rs` ([`Error`]), `observe.rs` (metrics),
//!   `inspect.rs` ([`Redlock::inspect`]: who holds a resource, read-only),
//!   `owner_info.rs` ([`OwnerInfo`]: who took a hold), `admin.rs`
//!   ([`Redlock::list`], [`Redlock::force_release`]).
//! - Around the lock: `fenced_write.rs` ([`FencedWriter`], the check on a
//!   Redis-backed resource), `token.rs` ([`OwnerToken`]), `sync.rs`.
//! - `mutants.rs`: planted bugs for testing the torture checker (feature
//!   `mutants`, off by default; compiled away without it).

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]
#![deny(rustdoc::broken_intra_doc_links)]

mod admin;
mod any_of;
mod backoff;
mod batcher;
mod build_error;
mod builder;
mod builder_nodes;
mod claim;
mod clock_watch;
mod config;
mod connection;
mod drop_guard;
mod election;
mod eligibility;
mod env;
mod error;
mod fan_out;
mod fence;
mod fenced_write;
mod health;
mod held;
mod ineligible;
mod inspect;
mod keys;
mod leader;
mod leadership;
mod lease;
mod lease_watch;
mod link;
mod lock;
mod lock_api;
mod multi_lock;
#[cfg(feature = "mutants")]
pub mod mutants;
#[cfg(not(feature = "mutants"))]
#[allow(dead_code, unreachable_pub)]
mod mutants;
mod node;
mod node_error;
mod node_id;
mod node_source;
mod nodes;
mod notify;
mod observe;
mod op;
mod options;
mod outcome;
mod owner_info;
mod probe;
mod queue;
mod quorum;
mod redlock;
mod reentrant;
mod registry;
mod rwlock;
mod scoped;
mod script;
mod semaphore;
mod settle;
mod shutdown;
mod sync;
mod tally;
mod tls;
mod token;
mod validity;
mod vote;
mod wait;
mod waiters;
mod watchdog;

pub use build_error::BuildError;
pub use builder::RedlockBuilder;
pub use config::RedlockConfig;
pub use election::Election;
pub use error::{Error, FencedWriteError};
pub use fence::FenceToken;
pub use fenced_write::FencedWriter;
pub use health::{Durability, NodeHealth, OLDEST_SERVER, Role};
pub use ineligible::Ineligible;
pub use inspect::{HoldView, Inspection, NodeView};
pub use leader::Leader;
pub use leadership::Leadership;
pub use lease::{AtRisk, LostReason};
pub use lease_watch::LeaseWatch;
pub use lock::Lock;
pub use multi_lock::MultiLock;
pub use node_error::NodeError;
pub use node_id::NodeId;
pub use options::{LockOptions, WatchdogOptions};
pub use outcome::{NodeOutcome, Outcomes};
pub use owner_info::OwnerInfo;
pub use redlock::Redlock;
pub use reentrant::{ReentrantLock, ReentrantOwner};
pub use rwlock::{ReadLock, WriteLock};
pub use semaphore::{Permit, Semaphore};
pub use token::OwnerToken;

/// The Redis client redquorum is built on, re-exported because its types
/// appear in this API: the `source` of [`BuildError::InvalidUrl`] and
/// [`NodeError`], and the [`Config`](fred::prelude::Config) taken by
/// [`RedlockBuilder::node_config`]. Use this path rather than a `fred`
/// dependency of your own, so the versions always match.
pub use fred;

// The guides' Rust examples compile as doc tests too.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/getting-started.md")]
struct GettingStartedGuide;
#[cfg(doctest)]
#[doc = include_str!("../../../docs/operations.md")]
struct OperationsGuide;
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadme;
