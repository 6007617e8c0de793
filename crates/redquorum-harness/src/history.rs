//! `History`: what every lock session did, on one monotonic clock.
//!
//! Times are offsets from the history's epoch (an `Instant` taken when it was
//! created), so every client in the process is measured on the same clock and
//! a recorded history can be checked, printed and compared as plain data.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a session ended.
///
/// # Examples
///
/// ```
/// use redquorum_harness::{Outcome, Session};
/// let s = Session::refused(0, "r", std::time::Duration::ZERO, "contended");
/// assert_eq!(s.outcome, Outcome::NotAcquired("contended".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Session {
    /// Which client (task) ran it.
    pub client: usize,
    /// The locked resource.
    pub resource: String,
    /// The lock's owner token ("" when not granted).
    pub owner: String,
    /// The fencing token, when the lock hands one out.
    pub fence: Option<u64>,
    /// When the acquire started.
    pub start: Duration,
    /// When the lock was granted.
    pub grant: Option<Duration>,
    /// When the client's validity ended (its deadline).
    pub validity_end: Option<Duration>,
    /// When the protected write started (the holder used the resource until then).
    pub write_start: Option<Duration>,
    /// When the protected write finished.
    pub write_end: Option<Duration>,
    /// When the release started (the lock may be free from then on).
    pub release: Option<Duration>,
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
            resource: resource.to_owned(),
            owner: String::new(),
            fence: None,
            start,
            grant: None,
            validity_end: None,
            write_start: None,
            write_end: None,
            release: None,
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
            resource: resource.to_owned(),
            owner: owner.to_owned(),
            fence: None,
            start,
            grant: Some(grant),
            validity_end: Some(validity_end),
            write_start: Some(grant),
            write_end: Some(grant),
            release: Some(validity_end),
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
