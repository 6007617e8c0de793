//! Fencing tokens: a number per resource that strictly increases from one
//! holder to the next, so a protected resource can refuse a stale holder.
//!
//! The protocol (docs/fencing.md has the safety argument and its model
//! check) has two steps, both on the one batched path:
//!
//! 1. **propose**: each node answers `max(stored + 1, node_ms * 1024)`
//!    and stores nothing; the candidate token is the highest proposal of a
//!    quorum. In the acquire call (each node that grants proposes) once a
//!    lock of the handle asked for a token, or with `eager_fence`;
//!    otherwise when the holder first asks (`fence()`), owner-checked.
//! 2. **commit** (write-back), when the holder first asks for its token
//!    (`fence()`): each node raises its counter to the token **only while the
//!    claim still holds there** (owner-checked). A quorum must confirm, or
//!    no token is handed out.
//!
//! Both rounds of `fence()` count only the nodes that granted the lock:
//! their hold came before any later conflicting grant on them. Any later
//! conflicting acquisition's quorum meets the committing quorum in a node
//! where the commit came first (the commit is owner-checked, and the later
//! grant needed our hold gone), so it proposes above the token. A holder
//! whose lease has ended can never get a token, so deferring the write-back
//! cannot hand a stale holder a token above a later one. A lock whose token
//! is never asked for costs nothing for it. The node time part keeps a
//! node that lost its data (restart without persistence) from proposing
//! below earlier tokens.

use std::fmt;

/// A number that strictly increases between successive holders of a resource.
///
/// If a hold B conflicts with a hold A that was granted before B was asked
/// for, and both got a token, B's is greater than A's, also across failed
/// attempts, node outages and a node that restarted without its data (see
/// `docs/fencing.md` for the clock assumption that last case needs). A
/// holder gets its token from its lock's `fence()`, only while it holds. Pass it with every write to the
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
/// let a = first.fence().await?; // fencing is on by default
/// first.release().await?;
/// let second = redlock.lock("ledger").await?;
/// assert!(second.fence().await? > a);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_order_by_value_and_print_as_numbers() {
        assert!(FenceToken::new(2) > FenceToken::new(1));
        assert_eq!(FenceToken::new(17).to_string(), "17");
        assert_eq!(format!("{:?}", FenceToken::new(17)), "FenceToken(17)");
    }
}
