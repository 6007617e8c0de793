//! [`AuditNudge`]: a grant asks the key audit for a round now.
//!
//! The audit reads every node every few tens of milliseconds, and a brief
//! hold (a few milliseconds) often falls between two rounds: the premise
//! rules then never judge it, and a vote the node never cast goes unseen
//! unless its holder happened to hold across a round. With a nudge from
//! each grant the next round starts at once (after a short gap, which
//! bounds the audit's load), so nearly every hold is read while it lasts.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The shortest time between two rounds, however often grants nudge.
pub(crate) const LEAST_GAP: Duration = Duration::from_millis(5);

/// A flag the workload raises on each grant and the audit waits on.
///
/// # Examples
///
/// ```
/// let history = redquorum_harness::History::new();
/// history.audit_nudge().nudge(); // the audit's next round starts soon
/// ```
#[derive(Debug, Clone, Default)]
pub struct AuditNudge(Arc<(Mutex<bool>, Condvar)>);

impl AuditNudge {
    /// Asks for a round now.
    ///
    /// # Examples
    ///
    /// See [`AuditNudge`].
    pub fn nudge(&self) {
        let (raised, changed) = &*self.0;
        *raised.lock().unwrap_or_else(PoisonError::into_inner) = true;
        changed.notify_all();
    }

    /// Sleeps [`LEAST_GAP`], then until a nudge came (meanwhile or before)
    /// or `every` has passed since the call; lowers the flag.
    pub(crate) fn wait(&self, every: Duration) {
        let until = Instant::now() + every;
        std::thread::sleep(LEAST_GAP.min(every));
        let (raised, changed) = &*self.0;
        let mut flag = raised.lock().unwrap_or_else(PoisonError::into_inner);
        while !*flag {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            flag = (changed.wait_timeout(flag, left))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        *flag = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nudge_ends_the_wait_early() {
        let nudge = AuditNudge::default();
        let waker = nudge.clone();
        let started = Instant::now();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            waker.nudge();
        });
        nudge.wait(Duration::from_secs(30));
        thread.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    #[test]
    fn without_a_nudge_the_wait_lasts_every() {
        let nudge = AuditNudge::default();
        let started = Instant::now();
        nudge.wait(Duration::from_millis(30));
        assert!(started.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn a_nudge_before_the_wait_is_kept_once() {
        let nudge = AuditNudge::default();
        nudge.nudge();
        let started = Instant::now();
        nudge.wait(Duration::from_secs(30));
        assert!(started.elapsed() < Duration::from_secs(30));
        // Lowered: the next wait lasts its whole time.
        let started = Instant::now();
        nudge.wait(Duration::from_millis(30));
        assert!(started.elapsed() >= Duration::from_millis(30));
    }
}
