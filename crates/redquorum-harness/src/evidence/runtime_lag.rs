//! `RuntimeLag`: a client group's runtime woke late. Each group's clients
//! and its lock's background work share one thread (`run/workload.rs`);
//! on a loaded machine that thread may wait for the CPU, and everything
//! the group sends (a release, an unwind) goes out that much later. A
//! task on each group's runtime sleeps [`LAG_TICK`] at a time and records
//! every wake-up later than [`LAG_RECORDED`], so a finding under load can
//! be read against it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::micros;

/// How long the lag meter sleeps at a time.
pub const LAG_TICK: Duration = Duration::from_millis(20);

/// The least lateness recorded.
pub const LAG_RECORDED: Duration = Duration::from_millis(50);

/// A client group's runtime woke `late` past its time, by `at`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let lag = redquorum_harness::RuntimeLag { group: 1, at: Duration::from_secs(3), late: Duration::from_millis(400) };
/// assert_eq!(lag.late, Duration::from_millis(400));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeLag {
    /// The client group.
    pub group: usize,
    /// When the meter woke (history clock).
    #[serde(with = "micros")]
    pub at: Duration,
    /// How late.
    #[serde(with = "micros")]
    pub late: Duration,
}
