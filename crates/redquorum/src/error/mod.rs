//! Runtime failures ([`Error`], [`FencedWriteError`]); bad configuration at
//! build time is build_error.rs's ([`BuildError`]), and what is wrong with
//! a node URL url_problem.rs's ([`UrlProblem`]). One node's failure,
//! [`NodeError`](crate::NodeError), sits lower, below `protocol/` (the
//! wire reports it), in `node_error.rs`.
//!
//! May import: `protocol/` and what sits below it (outcomes, ids).
//! Inside, `build_error.rs` imports `url_problem.rs` and this file, and
//! `url_problem.rs` this file; this file only declares and re-exports
//! them. Must never import anything above `protocol/` but each other.

mod build_error;
mod url_problem;

use std::time::Duration;

pub use build_error::BuildError;
pub use url_problem::UrlProblem;

use crate::outcome::Outcomes;

/// A lock operation that did not succeed.
///
/// `Contended`, `Unavailable` and `Expired` are definite: every node that
/// might hold our key was sent an unwind before the error was returned.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(redlock: redquorum::Redlock) {
/// use redquorum::Error;
///
/// match redlock.try_lock("invoices").await {
///     Ok(lock) => { /* critical section */ let _ = lock.release().await; }
///     Err(Error::Contended { .. }) => println!("someone else holds it"),
///     Err(Error::Unavailable { outcomes, .. }) => eprintln!("redis trouble: {outcomes}"),
///     Err(other) => eprintln!("{other}"),
/// }
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another owner holds the resource on a majority of nodes.
    #[error("{resource:?} is contended: {outcomes}")]
    Contended {
        /// The resource.
        resource: String,
        /// Every node's answer.
        outcomes: Outcomes,
    },
    /// Too few nodes answered to form a quorum: the nodes that failed, timed
    /// out or were refused left no majority, for us or (with the holds of
    /// others on fewer than a majority) for anyone.
    #[error("quorum unavailable for {resource:?}: {outcomes}")]
    Unavailable {
        /// The resource.
        resource: String,
        /// Every node's answer.
        outcomes: Outcomes,
    },
    /// A quorum was reached, but after the lease had no validity left.
    #[error("quorum for {resource:?} came too late: {} elapsed of a {} ttl", human(*elapsed), human(*ttl))]
    Expired {
        /// The resource.
        resource: String,
        /// Time from the first send to the decision.
        elapsed: Duration,
        /// The lease's TTL.
        ttl: Duration,
    },
    /// `lock()` retried until its wait ran out; `last` is the final attempt's error.
    #[error("gave up on {resource:?} after waiting {}; last attempt: {last}", human(*waited))]
    WaitTimeout {
        /// The resource.
        resource: String,
        /// How long `lock()` waited.
        waited: Duration,
        /// The last attempt's error, with its per-node outcomes.
        #[source]
        last: Box<Error>,
    },
    /// The lease ended while the lock was in use.
    #[error("lease on {resource:?} was lost")]
    Lost {
        /// The resource.
        resource: String,
    },
    /// Extend or release by an owner whose key is no longer on a quorum.
    #[error("{resource:?} is not held by this owner: {outcomes}")]
    NotHeld {
        /// The resource.
        resource: String,
        /// Every node's answer.
        outcomes: Outcomes,
    },
    /// The resource name was empty.
    #[error("resource name must not be empty")]
    EmptyResource,
    /// The watchdog stopped extending at its configured limit
    /// (`WatchdogOptions::max_extensions` or `max_hold`).
    #[error(
        "lease on {resource:?} reached its extension limit after {extensions} extensions and {held:?} held"
    )]
    ExtensionLimit {
        /// The resource.
        resource: String,
        /// Extensions made before the limit.
        extensions: u32,
        /// Time from acquisition to the limit.
        held: Duration,
    },
    /// `lock_any` or `lock_all` was given no resources.
    #[error("no resources given: lock_any and lock_all need at least one")]
    NoResources,
    /// A semaphore was asked for with no permits.
    #[error("semaphore {resource:?} needs at least one permit")]
    ZeroPermits {
        /// The semaphore's name.
        resource: String,
    },
    /// A reentrant owner id was not 32 hex digits (the id itself is not shown:
    /// it is a capability over that owner's locks).
    #[error("invalid reentrant owner id: expected 32 hex digits")]
    InvalidOwnerId,
    /// Fewer than a quorum took the fencing token's write-back (or proposed
    /// one), so no safe token could be issued; the lock is still held, ask again.
    #[error("no fencing token for {resource:?}: {outcomes}")]
    FenceUnavailable {
        /// The resource.
        resource: String,
        /// Every node's answer to the fencing round that failed.
        outcomes: Outcomes,
    },
    /// A fencing token was asked of a lock taken with
    /// [`LockOptions::fencing`](crate::LockOptions::fencing) off.
    #[error("{resource:?} was locked without fencing: no token")]
    FencingOff {
        /// The resource.
        resource: String,
    },
    /// The `Redlock` was shut down ([`Redlock::shutdown`](crate::Redlock::shutdown)).
    #[error("the redlock was shut down")]
    Shutdown,
    /// A multi-lock's resources are served by several shards of a cluster
    /// master (`redis-cluster://`): one all-or-nothing operation runs on
    /// one shard, so the set cannot be taken there. Nothing was sent.
    #[error(
        "{resource:?}: its resources are served by several shards of the cluster master {node} ({shards}); lock them one by one, or use single-server masters"
    )]
    CrossShard {
        /// The resources, as the multi-lock names them (`"a, b"`).
        resource: String,
        /// The cluster master.
        node: crate::node_id::NodeId,
        /// The shard primaries that serve them.
        shards: String,
    },
    /// A lease ticket of one kind of hold was adopted (or resumed) as
    /// another: a `write` ticket by [`Redlock::adopt`](crate::Redlock::adopt),
    /// say. Nothing was sent.
    #[error(
        "{resource:?}: a {ticket} ticket cannot be taken over as a {asked} (use the {ticket} kind's adopt or resume)"
    )]
    TicketKind {
        /// The ticket's resource.
        resource: String,
        /// The ticket's kind (`lock`, `write`).
        ticket: &'static str,
        /// The kind it was taken over as.
        asked: &'static str,
    },
}

impl Error {
    /// The per-node outcomes carried by this error, if it has them.
    ///
    /// For `WaitTimeout` these are the last attempt's.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(err: &redquorum::Error) {
    /// if let Some(outcomes) = err.outcomes() {
    ///     eprintln!("{outcomes}");
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn outcomes(&self) -> Option<&Outcomes> {
        match self {
            Self::Contended { outcomes, .. }
            | Self::Unavailable { outcomes, .. }
            | Self::NotHeld { outcomes, .. }
            | Self::FenceUnavailable { outcomes, .. } => Some(outcomes),
            Self::WaitTimeout { last, .. } => last.outcomes(),
            _ => None,
        }
    }

    /// A short stable name of the error: the `result` label of spans and
    /// metrics (metrics.rs, `result_label`; docs/observability.md lists the
    /// values).
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Self::Contended { .. } => "contended",
            Self::Unavailable { .. } => "unavailable",
            Self::Expired { .. } => "expired",
            Self::NotHeld { .. } => "not_held",
            Self::Lost { .. } => "lost",
            Self::FenceUnavailable { .. } => "fence_unavailable",
            _ => "error",
        }
    }

    /// True for errors worth another attempt: contention, unavailability, a late quorum.
    pub(crate) fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Contended { .. }
                | Self::Unavailable { .. }
                | Self::Expired { .. }
                | Self::FenceUnavailable { .. }
        )
    }
}

/// A fenced write that did not happen.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(writer: redquorum::FencedWriter, client: fred::clients::Client, lock: redquorum::Lock) {
/// use redquorum::FencedWriteError;
///
/// match writer.set(&client, "balance", "10", lock.fence().await.unwrap()).await {
///     Ok(()) => {}
///     Err(FencedWriteError::Stale { highest, .. }) => eprintln!("a newer holder ({highest}) wrote; stop"),
///     Err(other) => eprintln!("{other}"),
/// }
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FencedWriteError {
    /// A holder with a higher token already wrote: this holder's lock is stale.
    #[error("write to {key:?} refused: fencing token {token} is below {highest}, the highest seen")]
    Stale {
        /// The data key that was not written.
        key: String,
        /// The token this write carried.
        token: crate::protocol::fence::FenceToken,
        /// The highest token the resource has seen.
        highest: crate::protocol::fence::FenceToken,
    },
    /// The protected Redis answered with an error or not at all.
    #[error("fenced write to {key:?} failed: {source}")]
    Redis {
        /// The data key.
        key: String,
        /// fred's error.
        #[source]
        source: fred::error::Error,
    },
}

/// A duration as people write it, to the millisecond (`3s 187ms`, not
/// `3.187920393s`).
pub(crate) fn human(duration: Duration) -> humantime::FormattedDuration {
    let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
    humantime::format_duration(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_said_to_the_millisecond() {
        let error = Error::WaitTimeout {
            resource: "r".into(),
            waited: Duration::from_nanos(3_187_920_393),
            last: Box::new(Error::Lost {
                resource: "r".into(),
            }),
        };
        assert!(
            error.to_string().contains("after waiting 3s 187ms;"),
            "{error}"
        );
    }
}
