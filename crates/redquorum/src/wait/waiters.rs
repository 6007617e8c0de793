//! The lines of local waiters, one per lock key, woken by release
//! notifications (wait/notify.rs delivers them).
//!
//! An exclusive waiter (plain, write, reentrant lock, a campaign, a
//! semaphore's permit, and `lock_any` / `lock_all` over one resource) takes
//! turns: waiters on one key form a FIFO line and only the head contends, so
//! a release costs one acquire attempt from this process, not one per
//! waiter (a thundering herd would multiply the requests per hand-off). A
//! release frees one permit of a semaphore too, so its waiters take turns as
//! well. A reader (it may share), a waiter on several keys at once
//! (`lock_any`, `lock_all` over several resources: a release of one may
//! suit any of them) and an election's observer (on the lock's key and its
//! news, `keys::news`) listen instead: every announcement on any of their
//! keys wakes them.
//!
//! Notifications are hints, never the only way forward: a message is lost
//! when the subscriber is reconnecting, when the broadcast buffer overflows,
//! or when a hold expired instead of being released. A waiter therefore
//! waits for a notification *or* its jittered backoff, whichever comes first.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::FutureExt;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::sync::lock;
use crate::wait::recent::Recent;

/// Every line of local waiters, by lock key.
#[derive(Default)]
pub(crate) struct Lines {
    /// A line exists while a waiter is in it, and lingers a while after.
    map: Mutex<HashMap<String, Arc<Line>>>,
    /// `map.len()`, readable without the mutex.
    len: AtomicUsize,
}

impl fmt::Debug for Lines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lines")
            .field("len", &self.len.load(Ordering::Relaxed))
            .finish()
    }
}

/// The local waiters on one lock key.
struct Line {
    /// Counted under `Lines::map`'s mutex: the line may leave the map at zero.
    waiters: AtomicUsize,
    /// One permit: the right to contend. FIFO, so exclusive waiters take turns in order.
    turn: Arc<Semaphore>,
    /// Wakes the head (one at a time) on a release.
    head: Notify,
    /// Set while the head waits for a release (not for its turn, not
    /// trying): a release then wakes someone who will try at once.
    head_waiting: AtomicBool,
    /// The head woken by a local release has sent its next attempt (or
    /// queued it behind the release: [`Joining`]).
    attempt_sent: Notify,
    /// Wakes every listener on a release.
    listeners: Notify,
    /// Wakes so far: a listener that was not waiting when one came (busy
    /// between two waits) sees it by this count at its next wait.
    wakes: AtomicUsize,
    /// Set when the head won the lock: the next head then waits for that
    /// holder's release instead of trying at once against a held key.
    handed_over: AtomicBool,
    recent: Mutex<Recent>,
    /// When the last waiter left (the line then lingers).
    idle_since: Mutex<Option<Instant>>,
}

impl Line {
    fn new() -> Self {
        Self {
            waiters: 0.into(),
            turn: Arc::new(Semaphore::new(1)),
            head: Notify::new(),
            head_waiting: AtomicBool::new(false),
            attempt_sent: Notify::new(),
            listeners: Notify::new(),
            handed_over: AtomicBool::new(false),
            wakes: AtomicUsize::new(0),
            recent: Mutex::new(Recent::default()),
            idle_since: Mutex::new(None),
        }
    }

    fn wake(&self) {
        self.wakes.fetch_add(1, Ordering::AcqRel);
        self.head.notify_one();
        self.listeners.notify_waiters();
    }
}

impl Lines {
    /// Joins (or opens) the line of `key`; true when it was opened now (the
    /// caller then subscribes to its channel).
    fn join(&self, key: &str) -> (Arc<Line>, bool) {
        let mut map = lock(&self.map);
        let mut opened = false;
        let line = map.entry(key.to_owned()).or_insert_with(|| {
            opened = true;
            Arc::new(Line::new())
        });
        line.waiters.fetch_add(1, Ordering::Relaxed);
        *lock(&line.idle_since) = None;
        let line = Arc::clone(line);
        self.len.store(map.len(), Ordering::Relaxed);
        (line, opened)
    }

    /// Whether a line of `key` exists (waiters in it, or lingering).
    pub(crate) fn is_waited_on(&self, key: &str) -> bool {
        !self.is_idle() && lock(&self.map).contains_key(key)
    }

    /// Whether someone waits on `key` now (not only a lingering line).
    pub(crate) fn has_waiters(&self, key: &str) -> bool {
        !self.is_idle()
            && lock(&self.map)
                .get(key)
                .is_some_and(|line| line.waiters.load(Ordering::Relaxed) > 0)
    }

    /// True when no line exists: nothing to wake, nothing to look up.
    pub(crate) fn is_idle(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }

    /// A release of `key` by `token` (`None`: unknown): wakes its line,
    /// once per release although every node announces it. (An election's
    /// news, which free nothing, come on a line of their own, `keys::news`,
    /// that only observers wait on.)
    pub(crate) fn released(&self, key: &str, token: Option<&[u8]>) {
        let Some(line) = self.line(key) else {
            return;
        };
        if token.is_none_or(|token| lock(&line.recent).is_new(token)) {
            line.wake();
        }
    }

    /// The line of `key`, if any.
    fn line(&self, key: &str) -> Option<Arc<Line>> {
        if self.is_idle() {
            return None;
        }
        lock(&self.map).get(key).cloned()
    }

    /// A release of `key` by `token` made by this process: wakes its line
    /// as [`released`](Self::released) does, and when that woke a head
    /// waiting for it, returns what tells when the head's attempt is sent
    /// (the release holds its call open for it: a hand-off in one call).
    pub(crate) fn released_locally(&self, key: &str, token: &[u8]) -> Option<Joining> {
        let line = self.line(key)?;
        if !lock(&line.recent).is_new(token) {
            return None;
        }
        // A head that sent an attempt no release waited for left its mark.
        let _stale = line.attempt_sent.notified().now_or_never();
        let head_waits = line.head_waiting.load(Ordering::Acquire);
        line.wake();
        head_waits.then_some(Joining { line })
    }

    /// Wakes every line (a notification may have been missed).
    pub(crate) fn wake_all(&self) {
        for line in lock(&self.map).values() {
            line.wake();
        }
    }

    /// The keys of every line.
    pub(crate) fn keys(&self) -> Vec<String> {
        lock(&self.map).keys().cloned().collect()
    }

    /// Removes the lines empty for at least `linger`; returns their keys.
    pub(crate) fn remove_idle(&self, linger: Duration) -> Vec<String> {
        let mut map = lock(&self.map);
        let idle: Vec<String> = map
            .iter()
            .filter(|(_, line)| {
                line.waiters.load(Ordering::Relaxed) == 0
                    && lock(&line.idle_since).is_some_and(|since| since.elapsed() >= linger)
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in &idle {
            map.remove(key);
        }
        self.len.store(map.len(), Ordering::Relaxed);
        idle
    }
}

/// A waiter in the lines of one key (exclusive) or of several (listening).
pub(crate) struct Waiter {
    lines: Arc<Lines>,
    joined: Vec<Arc<Line>>,
    /// Each joined line's wakes when this listener last looked.
    seen: Vec<usize>,
    exclusive: bool,
    /// The head's permit, while this waiter is the head of its line.
    turn: Option<OwnedSemaphorePermit>,
}

impl fmt::Debug for Waiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Waiter")
            .field("lines", &self.joined.len())
            .field("exclusive", &self.exclusive)
            .field("is_head", &self.turn.is_some())
            .finish()
    }
}

impl Waiter {
    /// Joins the lines of `keys`; returns the waiter and the keys whose
    /// lines were opened now (to subscribe to). Exclusive waits are on one key.
    pub(crate) fn join(lines: &Arc<Lines>, keys: &[&str], exclusive: bool) -> (Self, Vec<String>) {
        let mut opened = Vec::new();
        let joined: Vec<Arc<Line>> = keys
            .iter()
            .map(|key| {
                let (line, new) = lines.join(key);
                if new {
                    opened.push((*key).to_owned());
                }
                line
            })
            .collect();
        let waiter = Self {
            lines: Arc::clone(lines),
            seen: joined
                .iter()
                .map(|line: &Arc<Line>| line.wakes.load(Ordering::Acquire))
                .collect(),
            joined,
            exclusive: exclusive && keys.len() == 1,
            turn: None,
        };
        (waiter, opened)
    }

    /// Waits until it may try again: a release notification, or `pause`.
    ///
    /// An exclusive waiter first waits for its turn at the head of the line
    /// (until `deadline`); a new head tries at once unless the previous head
    /// won the lock (then it waits for that holder's release). Returns
    /// whether a release woke it: a head woken so says when its attempt
    /// is sent ([`attempt_sent`](Self::attempt_sent)).
    pub(crate) async fn wait(&mut self, pause: Duration, deadline: Instant) -> bool {
        if !self.exclusive {
            let lines = self.joined.clone();
            let mut woken: Vec<_> = (lines.iter())
                .map(|line| Box::pin(line.listeners.notified()))
                .collect();
            // Registered before the count is read: a wake in between is
            // seen by one or the other.
            woken.iter_mut().for_each(|n| {
                n.as_mut().enable();
            });
            if self.take_wakes() {
                return true;
            }
            let any = futures::future::select_all(woken);
            tokio::select! {
                _ = any => {}
                () = tokio::time::sleep(pause) => {}
            }
            return self.take_wakes();
        }
        let line = &self.joined[0];
        if self.turn.is_none() {
            let turn = Arc::clone(&line.turn).acquire_owned();
            match tokio::time::timeout_at(deadline.into(), turn).await {
                Ok(Ok(permit)) => self.turn = Some(permit),
                // Deadline: let the caller make its last attempt.
                Ok(Err(_)) | Err(_) => return false,
            }
            if !line.handed_over.swap(false, Ordering::AcqRel) {
                // The previous head left without the lock (or there was none):
                // the resource may be free now.
                return false;
            }
        }
        let _waiting = HeadWaiting::mark(&line.head_waiting);
        tokio::select! {
            () = line.head.notified() => true,
            () = tokio::time::sleep(pause) => false,
        }
    }

    /// A hold of the line's key from this process is known to be live:
    /// the head waits for its release instead of trying at once (as after
    /// a head that won; wait/first_try.rs).
    pub(crate) fn expect_release(&self) {
        if self.exclusive {
            self.joined[0].handed_over.store(true, Ordering::Release);
        }
    }

    /// The head woken by a release has sent its next attempt: the release
    /// that woke it may send its call now ([`Joining`]).
    pub(crate) fn attempt_sent(&self) {
        if self.exclusive && self.turn.is_some() {
            self.joined[0].attempt_sent.notify_one();
        }
    }

    /// Whether any joined line woke since this listener last looked; marks
    /// those wakes seen.
    fn take_wakes(&mut self) -> bool {
        let mut woke = false;
        for (line, seen) in self.joined.iter().zip(&mut self.seen) {
            let now = line.wakes.load(Ordering::Acquire);
            woke |= now != *seen;
            *seen = now;
        }
        woke
    }

    /// The waiter got the lock: as head, it hands the turn to the next
    /// waiter, who then waits for this holder's release.
    pub(crate) fn won(self) {
        if self.turn.is_some() {
            self.joined[0].handed_over.store(true, Ordering::Release);
        }
    }
}

/// Marks a line's head as waiting for a release while alive: a wait
/// cancelled part-way (its acquire dropped) must not leave the mark, or
/// every later release would wait for a head that is not there.
struct HeadWaiting<'a>(&'a AtomicBool);

impl<'a> HeadWaiting<'a> {
    fn mark(flag: &'a AtomicBool) -> Self {
        flag.store(true, Ordering::Release);
        Self(flag)
    }
}

impl Drop for HeadWaiting<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// A local release's wait for the head it woke to send its attempt, so
/// that the attempt joins the release's call on each node.
pub(crate) struct Joining {
    line: Arc<Line>,
}

impl Joining {
    /// Resolves when the woken head has sent its attempt (true), or after
    /// `within` (false: a head that is slow to run, or gave up, costs the
    /// release no more).
    pub(crate) async fn attempt_sent(self, within: Duration) -> bool {
        let sent = self.line.attempt_sent.notified();
        tokio::time::timeout(within, sent).await.is_ok()
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let _map = lock(&self.lines.map);
        for line in &self.joined {
            if line.waiters.fetch_sub(1, Ordering::Relaxed) == 1 {
                *lock(&line.idle_since) = Some(Instant::now());
            }
        }
    }
}

#[cfg(test)]
#[path = "waiters_tests.rs"]
mod tests;
