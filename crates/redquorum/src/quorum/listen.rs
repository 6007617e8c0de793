//! Listening on a lock's announcements through the notifier's lines
//! (wait/notify.rs): the losses a watchdog extends on, the asks a holder
//! hears, the release an asker waits for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::Stream;

use crate::protocol::keys;
use crate::quorum::coordinator::Quorum;

/// Longer than any wait: a listener that waits for an event only.
const NEVER: Duration = Duration::from_secs(100 * 365 * 86_400);

impl Quorum {
    /// Resolves when someone asks the holders of `lock_key` to let go
    /// (`Redlock::ask_release`): heard on the lock's ask channel, once a
    /// quorum of the subscriber connections listens there (the asker
    /// publishes on every node, and asks again while it waits).
    pub(crate) async fn ask_heard(&self, lock_key: &str) {
        let line = keys::ask(lock_key);
        let never = Instant::now() + NEVER;
        let mut waiter = self.notifier().waiter(&[&line], false, never).await;
        waiter.wait(NEVER, never).await;
    }

    /// Every announcement that holds of `lock_key` were taken from their
    /// holders (a force-release, a move): a stream that subscribes at its
    /// first poll (on a quorum of the subscriber connections) and yields
    /// once per announcement heard (and after a subscriber reconnected, when
    /// one may have been missed).
    pub(crate) fn losses(&self, lock_key: &str) -> impl Stream<Item = ()> + Send + 'static + use<> {
        let (notifier, line) = (Arc::clone(self.notifier()), keys::lost(lock_key));
        futures::stream::unfold(None, move |waiter| {
            let (notifier, line) = (Arc::clone(&notifier), line.clone());
            async move {
                let never = Instant::now() + NEVER;
                let mut waiter = match waiter {
                    Some(waiter) => waiter,
                    None => notifier.waiter(&[&line], false, never).await,
                };
                waiter.wait(NEVER, never).await;
                Some(((), Some(waiter)))
            }
        })
    }

    /// Waits until `lock_key` is announced released, or `pause`, or
    /// `deadline`, whichever comes first.
    pub(crate) async fn release_heard(&self, lock_key: &str, pause: Duration, deadline: Instant) {
        let mut waiter = self.notifier().waiter(&[lock_key], false, deadline).await;
        let left = deadline.saturating_duration_since(Instant::now());
        waiter.wait(pause.min(left), deadline).await;
    }
}
