//! `Session`: one client's attempt to lock a resource and use it, with
//! every moment that matters on the history's clock (acquire, grant,
//! deadline, extensions, read, write, release), and the windows in which it
//! may assume it holds the lock alone.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::outcome::{Dropped, Holder, Outcome};
use super::share::Share;
use crate::micros;

mod cover;
mod display;

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
/// All times are offsets from the [`History`](crate::History)'s epoch.
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
    /// When a refused attempt ended: its acquire returned (the lock had
    /// sent its unwind by then) or was dropped. For a hold in a process of
    /// its own ([`Session::deadline_unseen`]: `redquorum exec`), granted or
    /// not, when that process exited: its release or unwind was done or
    /// given up by then. `None` for other granted sessions, and in
    /// histories from before the field.
    #[serde(
        with = "micros::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub ended: Option<Duration>,
    /// The owner token of every attempt its acquire made, in order, when
    /// the lock tells them (a refused or dropped attempt's keys are then
    /// known to be its own; empty when not told, or in older histories).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tried: Vec<String>,
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
    /// When each of `extensions` returned (the client then counted on its
    /// deadline); empty in histories from before the field.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "micros::vec")]
    pub renewed: Vec<Duration>,
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
    /// The holder never asked for a fencing token ([`crate::Grant::tokenless`]):
    /// with a fenced store it only reads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tokenless: bool,
    /// The hold was renewed out of the harness's sight (another process,
    /// `redquorum exec`, whose watchdog extends it): the use is known, not
    /// the deadline the lock gave, so `validity_end` is when the use ended.
    /// On a refused attempt: it ran in such a process, which ended with its
    /// unwind (at [`Session::ended`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deadline_unseen: bool,
    /// The other resources its hold covers ([`crate::Grant::covering`]: an
    /// all-of set, one hold of the same owner and lease on each name); the
    /// checker judges it as a hold of each of them too
    /// ([`Session::covered`], in `session/cover.rs`). Empty for a hold of
    /// one resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
    /// The nodes (by index, in the run's node order) whose votes the lock
    /// counted for the grant ([`crate::Grant::voters`]): each must have
    /// stored the hold. Empty when the driver does not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub voters: Vec<usize>,
    /// The owner whose hold this session took over ([`crate::Locker::adopt`]
    /// of its ticket): its grant continues that hold, with its fencing
    /// token, so the checker does not require a higher one. That owner's
    /// session ended its use at the hand-over (its `release`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopted_from: Option<String>,
    /// When the holder heard it was asked to let go (a kept hold's lock
    /// told it: [`crate::Locker::release_asked`]); it then finished up
    /// and released.
    #[serde(
        with = "micros::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub asked: Option<Duration>,
    /// How it ended.
    pub outcome: Outcome,
}

impl Session {
    /// When the unwind of an attempt its acquire tried ([`Session::tried`])
    /// was due: by the grant that followed it (the lock unwinds an attempt
    /// before it tries again), or when the acquire ended.
    pub(crate) fn unwind_due(&self) -> Option<Duration> {
        self.grant.or(self.ended)
    }

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
            ended: None,
            tried: Vec::new(),
            validity_end: None,
            write_start: None,
            write_end: None,
            release: None,
            released: None,
            extensions: Vec::new(),
            renewed: Vec::new(),
            read_at: None,
            read: None,
            wrote: None,
            paused: None,
            kind: String::new(),
            share: None,
            dropped: None,
            renews_itself: false,
            tokenless: false,
            deadline_unseen: false,
            adopted_from: None,
            asked: None,
            also: Vec::new(),
            voters: Vec::new(),
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
            owner: owner.to_owned(),
            grant: Some(grant),
            validity_end: Some(validity_end),
            write_start: Some(grant),
            write_end: Some(grant),
            release: Some(validity_end),
            outcome: Outcome::Completed,
            ..Self::refused(client, resource, start, "")
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
    /// extension's request (not before the grant) to its new deadline,
    /// each cut at the release.
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
        // A renewal's deadline is counted from its send less the drift
        // allowance, which may lie before the grant the workload recorded
        // (a watchdog renewing at once, told of a loss or a reconnect): the
        // holder believes it holds from its grant only.
        for e in &self.extensions {
            windows.push((e.at.max(grant), cut(e.until)));
        }
        windows.retain(|(from, until)| until > from);
        windows
    }

    /// When the claim of the window that opens at `from` (one of
    /// [`windows`](Self::windows)) was asked for: the acquire's start for
    /// the grant's window, the extension's sending for an extension's.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redquorum_harness::{Extension, Session};
    /// let ms = Duration::from_millis;
    /// let mut s = Session::granted(0, "r", "a", ms(0), ms(10), ms(900));
    /// s.extensions.push(Extension { at: ms(700), until: ms(2000) });
    /// assert_eq!(s.asked_for(ms(10)), ms(0));
    /// assert_eq!(s.asked_for(ms(700)), ms(700));
    /// ```
    #[must_use]
    pub fn asked_for(&self, from: Duration) -> Duration {
        if self.grant == Some(from) && self.validity_end.is_some() {
            self.start
        } else {
            from
        }
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
