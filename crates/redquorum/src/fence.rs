//! Fencing tokens: a number per resource that strictly increases from one
//! holder to the next, so a protected resource can refuse a stale holder.
//!
//! The protocol (docs/fencing.md has the safety argument) completes before
//! the `Lock` is handed out, in two rounds to every node:
//!
//! 1. **propose**: each node answers `max(stored + 1, node_ms * 1024)` and
//!    stores it; the token is the maximum over a quorum's proposals. The
//!    plain lock proposes in its acquire call (each node that grants the
//!    lock also proposes, `lock_ops.lua`) and takes the maximum over the
//!    granting quorum; the other lock kinds run this round after their
//!    quorum is won.
//! 2. **commit** (write-back): each node raises its stored value to the
//!    token; a quorum must confirm, or the acquisition fails and is unwound.
//!
//! Any later quorum intersects the committing quorum in a node that now
//! proposes above the token. The node time part keeps a node that lost its
//! data (restart without persistence) from proposing below earlier tokens.
//! Cost: one more concurrent round trip per acquisition for the plain lock
//! (two for the other lock kinds).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use fred::types::Value;
use futures::stream::{FuturesUnordered, StreamExt};

use crate::error::{Error, NodeError};
use crate::mutants::{self, Mutant};
use crate::node::Node;
use crate::outcome::{NodeOutcome, Outcomes};
use crate::quorum::Quorum;
use crate::scripts;

/// A number that strictly increases between successive holders of a resource.
///
/// If acquisition B started after acquisition A was granted, B's token is
/// greater than A's, also across failed attempts, node outages and a node
/// that restarted without its data (see `docs/fencing.md` for the clock
/// assumption that last case needs). Pass it with every write to the
/// protected resource, and have the resource refuse tokens lower than the
/// highest it has seen: see [`FencedWriter`](crate::FencedWriter), or for
/// SQL `UPDATE ... SET ..., fence = $token WHERE ... AND fence <= $token`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let first = redlock.lock("ledger").await?;
/// let a = first.fence().expect("fencing is on by default");
/// first.release().await?;
/// let second = redlock.lock("ledger").await?;
/// assert!(second.fence().unwrap() > a);
/// # second.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FenceToken(u64);

impl FenceToken {
    /// Wraps a value, e.g. one read back from `REDQUORUM_FENCE` or a database.
    ///
    /// # Examples
    ///
    /// ```
    /// let token = redquorum::FenceToken::new(42);
    /// assert_eq!(token.get(), 42);
    /// ```
    #[must_use]
    pub const fn new(value: u64) -> Self {
        Self(value)
    }

    /// The number, to store next to the data it protects.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum::FenceToken::new(7).get(), 7);
    /// ```
    #[must_use]
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for FenceToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Debug for FenceToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FenceToken({})", self.0)
    }
}

/// The key holding a resource's fencing counter on every node: `<lock key>:fence`.
///
/// Unlike the lock key it has no expiry: forgetting it is only safe once the
/// clocks have passed its time part (docs/fencing.md).
pub(crate) fn fence_key(lock_key: &str) -> String {
    format!("{lock_key}:fence")
}

/// Issues the next fencing token for `resource` (propose, then commit to a quorum).
///
/// Call it after the lock's quorum is won and before the lock is handed out;
/// any lock kind can use it with its own `fence_key`.
///
/// # Errors
///
/// [`Error::FenceUnavailable`] when fewer than a quorum answered either round.
/// The caller must then unwind its lock: the token may be on some nodes but
/// is not safe to use.
///
/// # Cancel safety
///
/// Dropping it leaves at most raised counters on some nodes, which is safe
/// (counters may run ahead, never behind); the caller's lock guard unwinds.
pub(crate) async fn issue(
    quorum: &Arc<Quorum>,
    resource: &str,
    fence_key: &str,
) -> Result<FenceToken, Error> {
    let needed = quorum.quorum();
    let proposals = round(quorum, needed, |node| {
        node.run(&scripts::FENCE_PROPOSE, fence_key, Vec::new())
    })
    .await
    .map_err(|outcomes| unavailable(quorum, resource, outcomes))?;
    let highest = proposals.into_iter().max().unwrap_or(0);
    commit(quorum, resource, fence_key, highest).await
}

/// The write-back round: raises the counter to `highest` (the maximum of a
/// quorum's proposals) on every node, and returns it as the token once a
/// quorum confirmed. The plain lock proposes in its acquire call
/// (`lock_ops.lua`) and only runs this round.
///
/// # Errors
///
/// [`Error::FenceUnavailable`] when fewer than a quorum confirmed; the
/// caller must then unwind its lock.
pub(crate) async fn commit(
    quorum: &Arc<Quorum>,
    resource: &str,
    fence_key: &str,
    highest: i64,
) -> Result<FenceToken, Error> {
    let needed = quorum.quorum();
    // Scripts return integers; a negative one would mean a corrupt counter.
    let token = FenceToken(u64::try_from(highest).unwrap_or(0));
    if mutants::is_active(Mutant::FenceWithoutWriteBack) {
        return Ok(token);
    }
    let args = vec![Value::from(token.0.to_string())];
    round(quorum, needed, |node| {
        node.run(&scripts::FENCE_COMMIT, fence_key, args.clone())
    })
    .await
    .map_err(|outcomes| unavailable(quorum, resource, outcomes))?;
    Ok(token)
}

fn unavailable(quorum: &Quorum, resource: &str, outcomes: Vec<NodeOutcome>) -> Error {
    Error::FenceUnavailable {
        resource: resource.to_owned(),
        outcomes: Outcomes::new(
            quorum.node_ids().cloned().zip(outcomes).collect(),
            quorum.quorum(),
        ),
    }
}

/// Runs `call` on every node at once until `needed` nodes replied, or until
/// too few can still reply. Returns the replies, or every node's outcome.
async fn round<'a, F, Fut>(
    quorum: &'a Quorum,
    needed: usize,
    call: F,
) -> Result<Vec<i64>, Vec<NodeOutcome>>
where
    F: Fn(&'a Arc<Node>) -> Fut,
    Fut: Future<Output = Result<i64, fred::error::Error>> + 'a,
{
    let nodes = quorum.nodes();
    let mut outcomes: Vec<NodeOutcome> = nodes.iter().map(|_| NodeOutcome::Unanswered).collect();
    let mut pending: FuturesUnordered<_> = nodes
        .iter()
        .enumerate()
        .map(|(index, node)| {
            let reply = call(node);
            async move { (index, reply.await) }
        })
        .collect();
    let mut replies = Vec::with_capacity(needed);
    let mut failed = 0;
    while let Some((index, reply)) = pending.next().await {
        match reply {
            Ok(value) => {
                outcomes[index] = NodeOutcome::Acquired;
                replies.push(value);
                if replies.len() >= needed {
                    return Ok(replies);
                }
            }
            Err(e) => {
                outcomes[index] = if *e.kind() == fred::error::ErrorKind::Timeout {
                    NodeOutcome::TimedOut
                } else {
                    NodeOutcome::Failed(NodeError::new(nodes[index].id().clone(), e))
                };
                failed += 1;
                if nodes.len() - failed < needed {
                    break;
                }
            }
        }
    }
    Err(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_order_by_value_and_print_as_numbers() {
        assert!(FenceToken::new(2) > FenceToken::new(1));
        assert_eq!(FenceToken::new(17).to_string(), "17");
        assert_eq!(format!("{:?}", FenceToken::new(17)), "FenceToken(17)");
    }

    #[test]
    fn the_fence_key_sits_next_to_the_lock_key() {
        assert_eq!(fence_key("lock:orders"), "lock:orders:fence");
    }
}
