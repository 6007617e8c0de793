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
    /// ([`Lock::fence`](crate::Lock::fence)). Default: `true`. A handle
    /// whose locks never ask for their token pays nothing for it. The first
    /// `fence()` of a lock whose acquire proposed no token proposes one on
    /// the nodes that granted the lock and still hold it, then writes it
    /// back: two concurrent round trips. Once a lock of a handle (or of a
    /// clone) has asked, that handle's acquires propose in the same call,
    /// and a `fence()` costs one round trip. Turn it off when nothing
    /// checks tokens (`fence()` is then [`Error::FencingOff`](crate::Error::FencingOff)).
    pub fencing: bool,
    /// Propose the fencing token with every acquire from the first one on,
    /// before any lock of the handle asked for its token: its first
    /// `fence()` costs one round trip too. Every acquire pays for the
    /// proposal (a counter read and the node's clock), asked for or not.
    /// Default: `false` (the handle starts proposing once a lock asks).
    /// `redquorum exec`, which hands every command its token, sets it.
    pub eager_fence: bool,
    /// Lock-delay (Chubby's, Consul's): when a hold **expires** without
    /// being released (its holder crashed, or lost its lease), the resource
    /// cannot be granted again until this much longer; a clean release
    /// frees it at once. It protects resources that cannot check fencing
    /// tokens from a holder that may still be working. Default: zero (off).
    pub lock_delay: Duration,
}

impl Default for LockOptions {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(10),
            wait: Duration::from_secs(10),
            retry_delay: Duration::from_millis(50),
            retry_jitter: Duration::from_millis(100),
            fencing: true,
            eager_fence: false,
            lock_delay: Duration::ZERO,
        }
    }
}

/// When the watchdog extends a lease, how it retries, and when it gives up.
///
/// Set them for a handle with
/// [`Redlock::with_watchdog`](crate::Redlock::with_watchdog); they apply to
/// [`Lock::auto_extend`](crate::Lock::auto_extend) and
/// [`Redlock::with_lock`](crate::Redlock::with_lock) on locks it takes.
///
/// The Redlock description asks for a limit on extensions, so a holder that
/// is stuck cannot keep a resource forever: set `max_extensions` or
/// `max_hold`. Reaching a limit is reported as
/// [`LostReason::Limit`](crate::LostReason::Limit) (and
/// [`Error::ExtensionLimit`](crate::Error::ExtensionLimit) from `with_lock`).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum::WatchdogOptions;
///
/// let capped = WatchdogOptions {
///     max_hold: Some(Duration::from_secs(600)),
///     ..Default::default()
/// };
/// assert_eq!(capped.extend_before, None); // a third of the TTL
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchdogOptions {
    /// Extend when this much validity is left. Default: `None`, meaning a
    /// third of the TTL. Must be below the TTL.
    pub extend_before: Option<Duration>,
    /// First pause before retrying a failed extension; it doubles on each
    /// retry, and retries stop when the validity runs out. Default: 50 ms.
    pub retry_delay: Duration,
    /// Give up (and signal loss) instead of extending more than this many
    /// times. Default: `None` (no limit).
    pub max_extensions: Option<u32>,
    /// Never extend the lease past this long after it was acquired; loss is
    /// signalled at the extension that would cross it. Default: `None` (no limit).
    pub max_hold: Option<Duration>,
    /// The lease is *at risk* ([`LeaseWatch::at_risk`](crate::LeaseWatch::at_risk))
    /// once less than this much validity is left without an extension having
    /// succeeded: time for the holder to stop before anyone else can be
    /// granted. Default: `None`, meaning half of `extend_before` (a sixth of
    /// the TTL). Must be above zero and below `extend_before`, so a healthy
    /// watchdog extends before the lease is ever at risk.
    pub stop_margin: Option<Duration>,
}

impl Default for WatchdogOptions {
    fn default() -> Self {
        Self {
            extend_before: None,
            retry_delay: Duration::from_millis(50),
            max_extensions: None,
            max_hold: None,
            stop_margin: None,
        }
    }
}

impl WatchdogOptions {
    /// How much validity is left when the watchdog extends a lease of `ttl`.
    pub(crate) fn extend_before_for(&self, ttl: Duration) -> Duration {
        self.extend_before.unwrap_or(ttl / 3)
    }

    /// How little validity may be left before a lease of `ttl` is at risk.
    pub(crate) fn stop_margin_for(&self, ttl: Duration) -> Duration {
        self.stop_margin
            .unwrap_or_else(|| self.extend_before_for(ttl) / 2)
    }

    /// Checks `extend_before` and `stop_margin` against the TTL of the locks
    /// it will extend.
    pub(crate) fn validate(&self, ttl: Duration) -> Result<(), BuildError> {
        if let Some(extend_before) = self.extend_before
            && (extend_before.is_zero() || extend_before >= ttl)
        {
            return Err(BuildError::ExtendBeforeOutOfRange { extend_before, ttl });
        }
        let extend_before = self.extend_before_for(ttl);
        match self.stop_margin {
            Some(stop_margin) if stop_margin.is_zero() || stop_margin >= extend_before => {
                Err(BuildError::StopMarginOutOfRange {
                    stop_margin,
                    extend_before,
                })
            }
            _ => Ok(()),
        }
    }
}

/// The longest TTL, wait or retry pause accepted: a year. Longer ones
/// overflow clock arithmetic or Redis's expiry range, and are mistakes.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

impl LockOptions {
    /// Checks the options against the per-node timeout and the supported range.
    pub(crate) fn validate(&self, node_timeout: Duration) -> Result<(), BuildError> {
        if self.ttl.is_zero() {
            return Err(BuildError::ZeroTtl);
        }
        if self.ttl > MAX_DURATION {
            return Err(BuildError::TtlOutOfRange {
                ttl: self.ttl,
                max: MAX_DURATION,
            });
        }
        for wait in [
            self.wait,
            self.retry_delay,
            self.retry_jitter,
            self.lock_delay,
        ] {
            if wait > MAX_DURATION {
                return Err(BuildError::WaitOutOfRange {
                    wait,
                    max: MAX_DURATION,
                });
            }
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
