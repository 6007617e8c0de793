//! Client groups and their pauses: each group of clients runs on a runtime
//! and thread of its own (see `run_workload_groups`), so the nemesis can
//! freeze one group as a whole — its lock client, its timers, its
//! connections — the way a stop-the-world GC pause or a SIGSTOP freezes a
//! client process, while the other groups go on.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;

/// Pauses client groups' runtimes; cheap to clone, shared with the nemesis.
///
/// # Examples
///
/// ```
/// let pauser = redquorum_harness::ClientPauser::default();
/// assert_eq!(pauser.groups(), 0);
/// assert!(!pauser.pause(0, std::time::Duration::from_millis(10)));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ClientPauser {
    groups: Arc<Mutex<Vec<Option<mpsc::UnboundedSender<Duration>>>>>,
}

impl ClientPauser {
    /// How many groups are running.
    ///
    /// # Examples
    ///
    /// See [`ClientPauser`].
    #[must_use]
    pub fn groups(&self) -> usize {
        self.running().len()
    }

    /// The indices of the groups still running (a group whose clients have
    /// all finished is gone, although it registered).
    ///
    /// # Examples
    ///
    /// See [`ClientPauser`].
    #[must_use]
    pub fn running(&self) -> Vec<usize> {
        self.lock()
            .iter()
            .enumerate()
            .filter(|(_, tx)| tx.as_ref().is_some_and(|tx| !tx.is_closed()))
            .map(|(group, _)| group)
            .collect()
    }

    /// Freezes `group`'s runtime for `duration` (returns at once). False if
    /// no such group runs.
    ///
    /// # Examples
    ///
    /// See [`ClientPauser`].
    #[must_use]
    pub fn pause(&self, group: usize, duration: Duration) -> bool {
        self.lock()
            .get(group)
            .and_then(Option::as_ref)
            .is_some_and(|tx| tx.send(duration).is_ok())
    }

    pub(crate) fn register(&self, group: usize) -> mpsc::UnboundedReceiver<Duration> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut groups = self.lock();
        if groups.len() <= group {
            groups.resize(group + 1, None);
        }
        groups[group] = Some(tx);
        rx
    }

    pub(crate) fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<mpsc::UnboundedSender<Duration>>>> {
        self.groups.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Spawned on a group's runtime: each pause blocks the runtime's only
/// thread, so every task of the group stops until it ends (a blocking sleep
/// on purpose: that is what a stop-the-world pause is).
pub(crate) fn serve_pauses(mut pauses: mpsc::UnboundedReceiver<Duration>) {
    tokio::spawn(async move {
        while let Some(duration) = pauses.recv().await {
            std::thread::sleep(duration);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group whose clients have finished (its receiver dropped) is not
    /// running: the nemesis must not aim a pause at it (at the end of a run
    /// that was reported as an error, "client group 1 is gone").
    #[test]
    fn a_finished_group_is_not_running() {
        let pauser = ClientPauser::default();
        let first = pauser.register(0);
        let second = pauser.register(1);
        assert_eq!(pauser.running(), [0, 1]);
        drop(second);
        assert_eq!(pauser.running(), [0]);
        assert_eq!(pauser.groups(), 1);
        assert!(!pauser.pause(1, Duration::from_millis(1)));
        assert!(pauser.pause(0, Duration::from_millis(1)));
        drop(first);
        assert!(pauser.running().is_empty());
    }
}
