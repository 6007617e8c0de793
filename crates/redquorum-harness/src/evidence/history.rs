//! `History`: what every lock session did, on one monotonic clock.
//!
//! Times are offsets from the history's epoch (an `Instant` taken when it was
//! created), so every client in the process is measured on the same clock and
//! a recorded history can be checked, printed and compared as plain data.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::audit::AuditNudge;
use super::host_clock::{self, HostClockStep};
use super::kept_holds::KeptHolds;
use super::runtime_lag::RuntimeLag;
use super::session::Session;

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
    /// The resource of the latest session recorded as released, until taken.
    latest_release: Arc<Mutex<Option<String>>>,
    /// The client groups' runtimes' late wake-ups.
    lags: Arc<Mutex<Vec<RuntimeLag>>>,
    /// Raised on each grant: the key audit's next round starts at once.
    audit_nudge: AuditNudge,
    /// The holds kept alive by their locks, while they run.
    kept_holds: KeptHolds,
}

impl Default for History {
    fn default() -> Self {
        Self::new()
    }
}

impl History {
    /// An empty history whose epoch is now. The process's watch of the
    /// machine's wall clock runs from then on ([`History::host_steps`]).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum_harness::History::new().sessions().is_empty());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        host_clock::watch();
        Self {
            epoch: Instant::now(),
            sessions: Arc::default(),
            latest_release: Arc::default(),
            lags: Arc::default(),
            audit_nudge: AuditNudge::default(),
            kept_holds: KeptHolds::default(),
        }
    }

    /// The holds kept alive by their locks while they run (the workload
    /// adds them, the operator ousts the oldest).
    ///
    /// # Examples
    ///
    /// ```
    /// let history = redquorum_harness::History::new();
    /// let _kept = history.kept_holds().began(0, "r", history.now());
    /// let later = history.now() + std::time::Duration::from_secs(1);
    /// assert_eq!(history.kept_holds().to_oust(later, later).as_deref(), Some("r"));
    /// ```
    #[must_use]
    pub fn kept_holds(&self) -> &KeptHolds {
        &self.kept_holds
    }

    /// What asks the key audit for a round now (the workload, on each
    /// grant; the torture run gives it to the audit).
    ///
    /// # Examples
    ///
    /// See [`AuditNudge`].
    #[must_use]
    pub fn audit_nudge(&self) -> &AuditNudge {
        &self.audit_nudge
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
        if session.released.is_some() {
            *lock(&self.latest_release) = Some(session.resource.clone());
        }
        lock(&self.sessions).push(session);
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
        lock(&self.sessions).len()
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

    /// The resource of the latest session recorded as released since the
    /// last call, if any: where a holder a quorum let go of may still be on
    /// a minority of nodes (the operator inspects it then, `run/operator/`).
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{History, Session};
    /// let history = History::new();
    /// let mut session = Session::refused(0, "r1", history.now(), "contended");
    /// session.released = Some(history.now());
    /// history.record(session);
    /// assert_eq!(history.take_latest_release().as_deref(), Some("r1"));
    /// assert_eq!(history.take_latest_release(), None);
    /// ```
    #[must_use]
    pub fn take_latest_release(&self) -> Option<String> {
        lock(&self.latest_release).take()
    }

    /// Records a client group's runtime waking late.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let history = redquorum_harness::History::new();
    /// let lag = redquorum_harness::RuntimeLag { group: 0, node: None, at: history.now(), late: Duration::from_millis(80) };
    /// history.note_lag(lag);
    /// assert_eq!(history.lags(), [lag]);
    /// ```
    pub fn note_lag(&self, lag: RuntimeLag) {
        lock(&self.lags).push(lag);
    }

    /// Every late wake-up recorded so far.
    #[must_use]
    pub fn lags(&self) -> Vec<RuntimeLag> {
        lock(&self.lags).clone()
    }

    /// Every step of the machine's wall clock against the monotonic clock
    /// seen since the epoch (`evidence/host_clock.rs`): a run that saw one
    /// was outside the lock's assumptions on every node at once.
    ///
    /// # Examples
    ///
    /// ```
    /// let history = redquorum_harness::History::new();
    /// // Empty unless the machine's clock was stepped meanwhile.
    /// for step in history.host_steps() {
    ///     println!("{step}");
    /// }
    /// ```
    #[must_use]
    pub fn host_steps(&self) -> Vec<HostClockStep> {
        host_clock::steps_since(self.epoch)
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
        lock(&self.sessions).clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
