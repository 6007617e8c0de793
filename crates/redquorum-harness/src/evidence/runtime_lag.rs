//! `RuntimeLag`: a client group's runtime, or a fault proxy's, woke late.
//! Each group's clients and its lock's background work share one thread
//! (`run/workload.rs`), and each fault proxy forwards on a thread of its
//! own (`faults/net/proxy.rs`); on a loaded machine such a thread may wait
//! for the CPU, and everything passing through it (a release, an unwind)
//! goes out that much later. A task on each of those runtimes sleeps
//! [`LAG_TICK`](crate::LAG_TICK) at a time and records every wake-up later
//! than [`LAG_RECORDED`](crate::LAG_RECORDED) (`lag_meter.rs`); the
//! orphan-key rule allows a removal that much longer on its path
//! (`check/audit/orphan/path_lag.rs`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::micros;

/// A client group's runtime (or the fault proxy in front of `node` for
/// that group) woke `late` past its time, by `at`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let lag = redquorum_harness::RuntimeLag { group: 1, node: None, at: Duration::from_secs(3), late: Duration::from_millis(400) };
/// assert_eq!(lag.late, Duration::from_millis(400));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeLag {
    /// The client group.
    pub group: usize,
    /// The node whose fault proxy (for `group`) woke late; `None`: the
    /// group's client runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<usize>,
    /// When the meter woke (history clock).
    #[serde(with = "micros")]
    pub at: Duration,
    /// How late.
    #[serde(with = "micros")]
    pub late: Duration,
}

impl RuntimeLag {
    /// When the thread stopped running: it woke `late` after its tick was
    /// due, so it was held from `at - late` to `at`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let lag = redquorum_harness::RuntimeLag { group: 0, node: Some(2), at: Duration::from_secs(3), late: Duration::from_millis(400) };
    /// assert_eq!(lag.held_from(), Duration::from_millis(2600));
    /// ```
    #[must_use]
    pub fn held_from(&self) -> Duration {
        self.at.saturating_sub(self.late)
    }
}
