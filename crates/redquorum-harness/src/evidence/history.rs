//! `History`: what every lock session did, on one monotonic clock.
//!
//! Times are offsets from the history's epoch (an `Instant` taken when it was
//! created), so every client in the process is measured on the same clock and
//! a recorded history can be checked, printed and compared as plain data.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::check::Share;
use crate::micros;

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

/// A successful extension: from when it was asked for to the new deadline.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let e = redquorum_harness::Extension { at: Duration::ZERO, until: Duration::from_secs(1) };
/// assert!(e.until > e.at);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extension {
    /// When the extension was sent.
    #[serde(with = "micros")]
    pub at: Duration,
    /// The deadline it granted.
    #[serde(with = "micros")]
    pub until: Duration,
}

/// One client's attempt to lock a resource and use it.
///
/// All times are offsets from the [`History`]'s epoch.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{Outcome, Session};
/// let s = Session::granted(0, "r", "owner-a", Duration::ZERO, Duration::from_millis(1), Duration::from_millis(900));
/// assert_eq!(s.outcome, Outcome::Completed);
/// assert_eq!(s.exclusive_until(), Some(Duration::from_millis(900)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Session {
    /// Which client (task) ran it.
    pub client: usize,
    /// The client's group (its own proxies and runtime, faulted together).
    #[serde(default)]
    pub group: usize,
    /// How the holder used its lease.
    #[serde(default)]
    pub holder: Holder,
    /// The locked resource.
    pub resource: String,
    /// The lock's owner token ("" when not granted).
    pub owner: String,
    /// The fencing token, when the lock hands one out.
    pub fence: Option<u64>,
    /// When the acquire started.
    #[serde(with = "micros")]
    pub start: Duration,
    /// When the lock was granted.
    #[serde(with = "micros::option", default)]
    pub grant: Option<Duration>,
    /// When the client's validity ended (its deadline).
    #[serde(with = "micros::option", default)]
    pub validity_end: Option<Duration>,
    /// When the protected write started (the holder used the resource until then).
    #[serde(with = "micros::option", default)]
    pub write_start: Option<Duration>,
    /// When the protected write finished.
    #[serde(with = "micros::option", default)]
    pub write_end: Option<Duration>,
    /// When the release started (the lock may be free from then on).
    #[serde(with = "micros::option", default)]
    pub release: Option<Duration>,
    /// When the release returned confirmed by a quorum of nodes (the lock
    /// is free from then on, unless a fault wiped the confirmation).
    #[serde(
        with = "micros::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub released: Option<Duration>,
    /// Extensions granted while held, in order (`validity_end` stays the first lease's end).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Extension>,
    /// When the protected read finished.
    #[serde(with = "micros::option", default)]
    pub read_at: Option<Duration>,
    /// The protected value read (the start of the read-modify-write).
    #[serde(default)]
    pub read: Option<i64>,
    /// The value the holder wrote (`read + 1` for an honest holder).
    #[serde(default)]
    pub wrote: Option<i64>,
    /// How long the holder paused inside its critical section (GC-pause model).
    #[serde(with = "micros::option", default)]
    pub paused: Option<Duration>,
    /// The lock kind that granted it (`plain`, `read`, ...; empty: not recorded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// How its hold may share the resource (`None`: exclusive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<Share>,
    /// Which future the workload dropped part-way, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<Dropped>,
    /// The lock renewed the hold by itself ([`crate::Grant::renews_itself`]):
    /// `extensions` are the holder's own, not all of them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub renews_itself: bool,
    /// How it ended.
    pub outcome: Outcome,
}

impl Session {
    /// A session that was not granted.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = redquorum_harness::Session::refused(1, "r", std::time::Duration::ZERO, "contended");
    /// assert!(s.grant.is_none());
    /// ```
    #[must_use]
    pub fn refused(client: usize, resource: &str, start: Duration, why: &str) -> Self {
        Self {
            client,
            group: 0,
            holder: Holder::Brief,
            resource: resource.to_owned(),
            owner: String::new(),
            fence: None,
            start,
            grant: None,
            validity_end: None,
            write_start: None,
            write_end: None,
            release: None,
            released: None,
            extensions: Vec::new(),
            read_at: None,
            read: None,
            wrote: None,
            paused: None,
            kind: String::new(),
            share: None,
            dropped: None,
            renews_itself: false,
            outcome: Outcome::NotAcquired(why.to_owned()),
        }
    }

    /// A completed session granted at `grant`, valid until `validity_end`,
    /// writing and releasing just before `validity_end` (adjust fields as needed).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut s = redquorum_harness::Session::granted(0, "r", "a", Duration::ZERO, Duration::from_millis(5), Duration::from_secs(1));
    /// s.fence = Some(7);
    /// assert_eq!(s.grant, Some(Duration::from_millis(5)));
    /// ```
    #[must_use]
    pub fn granted(
        client: usize,
        resource: &str,
        owner: &str,
        start: Duration,
        grant: Duration,
        validity_end: Duration,
    ) -> Self {
        Self {
            client,
            group: 0,
            holder: Holder::Brief,
            resource: resource.to_owned(),
            owner: owner.to_owned(),
            fence: None,
            start,
            grant: Some(grant),
            validity_end: Some(validity_end),
            write_start: Some(grant),
            write_end: Some(grant),
            release: Some(validity_end),
            released: None,
            extensions: Vec::new(),
            read_at: None,
            read: None,
            wrote: None,
            paused: None,
            kind: String::new(),
            share: None,
            dropped: None,
            renews_itself: false,
            outcome: Outcome::Completed,
        }
    }

    /// The end of the time this session may assume it holds the lock alone:
    /// its validity end, or its release if that came first. `None` if not granted.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = redquorum_harness::Session::refused(1, "r", std::time::Duration::ZERO, "contended");
    /// assert_eq!(s.exclusive_until(), None);
    /// ```
    #[must_use]
    pub fn exclusive_until(&self) -> Option<Duration> {
        let end = self.validity_end?;
        self.grant?;
        Some(self.release.map_or(end, |release| release.min(end)))
    }

    /// The intervals in which this session may assume it holds the lock
    /// alone: from the grant to the first deadline, then from each
    /// extension's request to its new deadline, each cut at the release.
    /// Empty if not granted.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redquorum_harness::{Extension, Session};
    /// let ms = Duration::from_millis;
    /// let mut s = Session::granted(0, "r", "a", ms(0), ms(10), ms(900));
    /// s.extensions.push(Extension { at: ms(1200), until: ms(2000) });
    /// s.release = Some(ms(1500));
    /// assert_eq!(s.windows(), vec![(ms(10), ms(900)), (ms(1200), ms(1500))]);
    /// assert_eq!(s.deadline(), Some(ms(2000)));
    /// ```
    #[must_use]
    pub fn windows(&self) -> Vec<(Duration, Duration)> {
        let Some(grant) = self.grant else {
            return Vec::new();
        };
        let cut = |end: Duration| self.release.map_or(end, |release| release.min(end));
        let mut windows = Vec::with_capacity(1 + self.extensions.len());
        if let Some(end) = self.validity_end {
            windows.push((grant, cut(end)));
        }
        for e in &self.extensions {
            windows.push((e.at, cut(e.until)));
        }
        windows.retain(|(from, until)| until > from);
        windows
    }

    /// The last deadline: the last extension's, else `validity_end`.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = redquorum_harness::Session::refused(0, "r", std::time::Duration::ZERO, "contended");
    /// assert_eq!(s.deadline(), None);
    /// ```
    #[must_use]
    pub fn deadline(&self) -> Option<Duration> {
        self.extensions
            .last()
            .map(|e| e.until)
            .or(self.validity_end)
    }

    /// True when the session held until within a tenth of its lease of the
    /// deadline (what a too-long lease needs to show).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let ms = Duration::from_millis;
    /// let mut s = redquorum_harness::Session::granted(0, "r", "a", ms(0), ms(0), ms(1000));
    /// s.release = Some(ms(950));
    /// assert!(s.ran_near_deadline());
    /// s.release = Some(ms(500));
    /// assert!(!s.ran_near_deadline());
    /// ```
    #[must_use]
    pub fn ran_near_deadline(&self) -> bool {
        match (self.grant, self.deadline(), self.release) {
            (Some(grant), Some(end), Some(release)) if end > grant => {
                release + (end - grant) / 10 >= end
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |t: Option<Duration>| {
            t.map_or_else(
                || "-".to_owned(),
                |t| format!("{:.1}", t.as_secs_f64() * 1e3),
            )
        };
        write!(
            f,
            "client {} {:?} owner {} fence {} start {} grant {} valid-until {} write {}..{} release {} ({:?})",
            self.client,
            self.resource,
            if self.owner.is_empty() {
                "-"
            } else {
                &self.owner
            },
            self.fence.map_or_else(|| "-".to_owned(), |t| t.to_string()),
            ms(Some(self.start)),
            ms(self.grant),
            ms(self.validity_end),
            ms(self.write_start),
            ms(self.write_end),
            ms(self.release),
            self.outcome
        )?;
        f.write_str(" (times in ms)")
    }
}

/// A shared, append-only record of sessions with its epoch. Cheap to clone.
///
/// # Examples
///
/// ```
/// let history = redquorum_harness::History::new();
/// let start = history.now();
/// history.record(redquorum_harness::Session::refused(0, "r", start, "contended"));
/// assert_eq!(history.sessions().len(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct History {
    epoch: Instant,
    sessions: Arc<Mutex<Vec<Session>>>,
}

impl Default for History {
    fn default() -> Self {
        Self::new()
    }
}

impl History {
    /// An empty history whose epoch is now.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum_harness::History::new().sessions().is_empty());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self {
            epoch: Instant::now(),
            sessions: Arc::default(),
        }
    }

    /// The instant all times are measured from.
    ///
    /// # Examples
    ///
    /// ```
    /// let history = redquorum_harness::History::new();
    /// assert!(history.epoch() <= std::time::Instant::now());
    /// ```
    #[must_use]
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Now, as an offset from the epoch.
    ///
    /// # Examples
    ///
    /// ```
    /// let history = redquorum_harness::History::new();
    /// assert!(history.now() <= history.now());
    /// ```
    #[must_use]
    pub fn now(&self) -> std::time::Duration {
        self.epoch.elapsed()
    }

    /// `instant` as an offset from the epoch (zero if before it).
    ///
    /// # Examples
    ///
    /// ```
    /// let history = redquorum_harness::History::new();
    /// let later = std::time::Instant::now() + std::time::Duration::from_secs(1);
    /// assert!(history.at(later) >= std::time::Duration::from_millis(999));
    /// ```
    #[must_use]
    pub fn at(&self, instant: Instant) -> Duration {
        instant.saturating_duration_since(self.epoch)
    }

    /// Appends a session.
    ///
    /// # Examples
    ///
    /// ```
    /// let history = redquorum_harness::History::new();
    /// history.record(redquorum_harness::Session::refused(0, "r", history.now(), "unavailable"));
    /// ```
    pub fn record(&self, session: Session) {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(session);
    }

    /// How many sessions were recorded so far.
    ///
    /// # Examples
    ///
    /// ```
    /// let history = redquorum_harness::History::new();
    /// assert_eq!(history.len(), 0);
    /// assert!(history.is_empty());
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// True when nothing was recorded.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum_harness::History::new().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of every session recorded so far.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum_harness::History::new().sessions().is_empty());
    /// ```
    #[must_use]
    pub fn sessions(&self) -> Vec<Session> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}
