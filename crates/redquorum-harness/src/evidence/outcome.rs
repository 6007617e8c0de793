//! How a session went and how its holder behaved: its [`Outcome`], the
//! future the workload [`Dropped`] part-way, and the [`Holder`] kind that
//! used the lease.

use serde::{Deserialize, Serialize};

/// How a session ended.
///
/// # Examples
///
/// ```
/// use redquorum_harness::{Outcome, Session};
/// let s = Session::refused(0, "r", std::time::Duration::ZERO, "contended");
/// assert_eq!(s.outcome, Outcome::NotAcquired("contended".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "why")]
#[non_exhaustive]
pub enum Outcome {
    /// Locked, wrote the protected value, released.
    Completed,
    /// The lock was not granted (a definite failure: the client unwound it). The kind says why.
    NotAcquired(String),
    /// Granted, but the validity ran out before the write, so the holder did not write.
    Abandoned,
    /// Granted, but the protected write failed in a way that leaves its effect unknown.
    Indeterminate(String),
    /// Granted, but the fenced store refused the read or the write: a higher
    /// fencing token had been seen there (fencing doing its job).
    Rejected,
    /// Granted a hold that may share (a reader, a reentrant owner's hold, a
    /// permit): read the protected value and did not write it (sharers
    /// would lose each other's updates).
    ReadOnly,
}

/// Which of a session's futures the workload dropped part-way (cancellation).
///
/// # Examples
///
/// ```
/// assert_eq!(redquorum_harness::Dropped::Release.name(), "release");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Dropped {
    /// The acquire (the session is refused as `dropped`; a hold it made
    /// must be unwound or released by the library on drop).
    Acquire,
    /// The release (the library must still free the hold at once).
    Release,
}

impl Dropped {
    /// The kebab-case name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Dropped::Acquire => "acquire",
            Dropped::Release => "release",
        }
    }
}

/// How a holder uses its lease (the workload's mix, see `WorkloadConfig::holders`).
///
/// # Examples
///
/// ```
/// assert_eq!(redquorum_harness::Holder::default(), redquorum_harness::Holder::Brief);
/// ```
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Holder {
    /// Reads, holds a few ms, writes with a safe margin left, releases.
    #[default]
    Brief,
    /// Uses the lease until just before its deadline: a lease that is too
    /// long then overlaps the next holder.
    ToDeadline,
    /// Pauses (a GC pause) until past its deadline, extends, and writes only
    /// if the extension succeeded: a lease revived after it lapsed shows as a
    /// lost update.
    Extending,
    /// Pauses past its deadline and writes anyway, unaware (the GC victim):
    /// breaks assumption (b) on purpose; fencing must refuse its write.
    Paused,
    /// Keeps its lease alive through several extensions, each sent with a
    /// third of the lease left, and writes after the last only if every
    /// one succeeded: a lease kept alive on fewer than a quorum shows as
    /// an overlap with the next holder.
    Renewing,
    /// Works a long job (several TTLs) while the lock keeps its lease alive
    /// by its own renewal (`Grant::kept`: the lock's adapter says so, this
    /// kind is never drawn from the mix): each renewal sent late (a stalled
    /// or paused node, after a force-release) must not bring a hold back.
    Kept,
}

impl Holder {
    /// Every kind.
    pub const ALL: [Holder; 5] = [
        Holder::Brief,
        Holder::ToDeadline,
        Holder::Extending,
        Holder::Paused,
        Holder::Renewing,
    ];

    /// The kebab-case name.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::Holder::ToDeadline.name(), "to-deadline");
    /// ```
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Holder::Brief => "brief",
            Holder::ToDeadline => "to-deadline",
            Holder::Extending => "extending",
            Holder::Paused => "paused",
            Holder::Renewing => "renewing",
            Holder::Kept => "kept",
        }
    }
}

impl std::str::FromStr for Holder {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|h| h.name() == s)
            .ok_or_else(|| {
                format!("unknown holder {s:?} (brief, to-deadline, extending, paused, renewing)")
            })
    }
}
