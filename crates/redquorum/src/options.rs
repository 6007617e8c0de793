//! Per-call lock options: one plain struct, as fred's `Options`.

use std::time::Duration;

use crate::error::BuildError;

/// How a lock is taken: its lease and how long `lock()` keeps trying.
///
/// Set defaults for a `Redlock` on its builder, and override them for some
/// calls with [`Redlock::with_options`](crate::Redlock::with_options).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum::LockOptions;
///
/// let quick = LockOptions {
///     ttl: Duration::from_secs(2),
///     wait: Duration::from_millis(500),
///     ..Default::default()
/// };
/// assert_eq!(quick.retry_delay, Duration::from_millis(50));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockOptions {
    /// The lease: how long each node keeps the key. Default: 10 s.
    pub ttl: Duration,
    /// How long `lock()` keeps retrying before `WaitTimeout`. Default: 10 s.
    /// `try_lock()` ignores it (one attempt).
    pub wait: Duration,
    /// The fixed part of the pause between attempts. Default: 50 ms.
    pub retry_delay: Duration,
    /// A random extra pause in `[0, retry_jitter)`, so contenders spread out. Default: 100 ms.
    pub retry_jitter: Duration,
    /// Issue a [`FenceToken`](crate::FenceToken) with each lock
    /// ([`Lock::fence`](crate::Lock::fence)). Default: `true`. It costs two
    /// more concurrent round trips to the nodes per acquisition (propose,
    /// then write back to a quorum); turn it off when nothing checks tokens.
    pub fencing: bool,
}

impl Default for LockOptions {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(10),
            wait: Duration::from_secs(10),
            retry_delay: Duration::from_millis(50),
            retry_jitter: Duration::from_millis(100),
            fencing: true,
        }
    }
}

impl LockOptions {
    /// Checks the options against the per-node timeout.
    pub(crate) fn validate(&self, node_timeout: Duration) -> Result<(), BuildError> {
        if self.ttl.is_zero() {
            return Err(BuildError::ZeroTtl);
        }
        if node_timeout >= self.ttl {
            return Err(BuildError::NodeTimeoutNotBelowTtl {
                node_timeout,
                ttl: self.ttl,
            });
        }
        Ok(())
    }
}
