//! The lease watchdog: a task that extends a held lock before its lease
//! runs out, retries failed extensions while validity remains, and declares
//! the lease lost when it cannot (lease/state.rs has the state it moves).
//! It also extends at once when a force-release or a move of a hold of its
//! lock is announced (the lock's lost channel): a refusal then declares the
//! loss within a round trip of the announcement.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::lease::state::{Lease, LostReason, RunningGuard};
use crate::options::WatchdogOptions;
use crate::protocol::claim::Claim;
use crate::quorum::coordinator::Quorum;

/// Bound on extension attempts for one lease period; the deadline bounds them in time too.
const MAX_ATTEMPTS: u32 = 64;

/// What the watchdog needs to extend one hold: the same quorum extension
/// every kind uses.
pub(crate) struct Extender {
    pub(crate) quorum: Arc<Quorum>,
    pub(crate) claim: Arc<Claim>,
}

impl Extender {
    /// One quorum extension, with the validity check; the new deadline.
    async fn extend(&self) -> Result<Instant, Error> {
        self.quorum.extend(&self.claim).await
    }
}

/// A running watchdog: dropping `stop` asks the task to end at its next pause.
#[derive(Debug)]
pub(crate) struct Watchdog {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Watchdog {
    /// Spawns the extension task on the runtime the `Redlock` was built on.
    pub(crate) fn spawn(extender: Extender, shared: Arc<Lease>, options: WatchdogOptions) -> Self {
        let (stop, stopped) = oneshot::channel();
        let running = RunningGuard::new(Arc::clone(&shared));
        let runtime = extender.quorum.runtime().clone();
        let task = runtime.spawn(async move {
            let _running = running;
            run(extender, shared, options, stopped).await;
        });
        Self { stop, task }
    }

    /// True once the task has ended (by itself, after a loss).
    pub(crate) fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops the task and waits for it, including any extension in flight,
    /// so a release sent afterwards is not overtaken by an extension.
    pub(crate) async fn stop(self) {
        drop(self.stop);
        let _ = self.task.await;
    }
}

/// How one lease period ended.
enum Period {
    Extended,
    Stopped,
    Lost(LostReason),
}

async fn run(
    extender: Extender,
    shared: Arc<Lease>,
    options: WatchdogOptions,
    mut stop: oneshot::Receiver<()>,
) {
    let extend_before = options.extend_before_for(extender.claim.ttl);
    // A force-release or a move of a hold of this lock is announced: extend
    // at once, so a loss is found in one round trip, not at the next turn.
    let losses = extender.quorum.losses(extender.claim.keys.lock_str());
    let mut losses = std::pin::pin!(losses);
    // Bounded in time by `max_hold` when set; otherwise this is the point of
    // the watchdog: it runs while the lock is held, and every exit path below
    // (stop, loss) ends it.
    loop {
        if shared.lost_reason().is_some() {
            return;
        }
        let deadline = shared.deadline();
        let extend_at = deadline.checked_sub(extend_before).unwrap_or(deadline);
        // Also woken by any state change: a loss declared elsewhere (a
        // refused `extend`, `Redlock::shutdown`) ends the task at once.
        let mut changed = shared.state.subscribe();
        tokio::select! {
            biased;
            _ = &mut stop => return,
            _ = changed.changed() => continue,
            () = tokio::time::sleep_until(extend_at.into()) => {}
            Some(()) = losses.next() => {
                tracing::debug!(resource = %shared.resource, "a loss announced on this lock: extending at once");
            }
        }
        if let Some(reason) = limit_reached(&options, &shared, extender.claim.ttl) {
            shared.declare_lost(reason);
            return;
        }
        match extend_before_deadline(&extender, &shared, &options, deadline, &mut stop).await {
            Period::Extended => {}
            Period::Stopped => return,
            Period::Lost(reason) => {
                shared.declare_lost(reason);
                return;
            }
        }
    }
}

/// The limit the next extension would cross, if any.
fn limit_reached(options: &WatchdogOptions, shared: &Lease, ttl: Duration) -> Option<LostReason> {
    let extensions = shared.extensions();
    let held = shared.acquired.elapsed();
    let too_many = options.max_extensions.is_some_and(|max| extensions >= max);
    let too_long = options.max_hold.is_some_and(|max| held + ttl > max);
    (too_many || too_long).then_some(LostReason::Limit { extensions, held })
}

/// Extends with doubling pauses between failed attempts until it works, is
/// refused, the deadline passes, or the task is stopped. A stop is only
/// honoured between attempts, so an extension in flight always completes.
async fn extend_before_deadline(
    extender: &Extender,
    shared: &Lease,
    options: &WatchdogOptions,
    deadline: Instant,
    stop: &mut oneshot::Receiver<()>,
) -> Period {
    let mut pause = options.retry_delay;
    for _ in 0..MAX_ATTEMPTS {
        if Instant::now() >= deadline {
            return Period::Lost(LostReason::Expired);
        }
        match extender.extend().await {
            // An extension that lands after the old deadline cannot revive
            // the lease: observers may already have stopped on its loss.
            Ok(new_deadline) => {
                return if shared.extended(new_deadline) {
                    Period::Extended
                } else {
                    Period::Lost(LostReason::Expired)
                };
            }
            Err(Error::NotHeld { .. }) => return Period::Lost(LostReason::NotHeld),
            Err(error) => {
                tracing::debug!(%error, resource = %shared.resource, "extension failed; retrying while validity remains");
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::select! {
            biased;
            _ = &mut *stop => return Period::Stopped,
            () = tokio::time::sleep(pause.min(left)) => {}
        }
        pause = pause.saturating_mul(2);
    }
    // Out of attempts: let the lease run out rather than hammer the nodes.
    tokio::select! {
        biased;
        _ = &mut *stop => Period::Stopped,
        () = tokio::time::sleep_until(deadline.into()) => Period::Lost(LostReason::Expired),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::state::test_lease;

    #[test]
    fn limits_trip_on_count_and_on_hold_time() {
        let shared = test_lease(Instant::now() + Duration::from_secs(1));
        let ttl = Duration::from_secs(1);
        let none = WatchdogOptions::default();
        assert_eq!(limit_reached(&none, &shared, ttl), None);
        let count = WatchdogOptions {
            max_extensions: Some(0),
            ..Default::default()
        };
        assert!(matches!(
            limit_reached(&count, &shared, ttl),
            Some(LostReason::Limit { extensions: 0, .. })
        ));
        let hold = WatchdogOptions {
            max_hold: Some(Duration::from_millis(500)),
            ..Default::default()
        };
        assert!(limit_reached(&hold, &shared, ttl).is_some());
        let roomy = WatchdogOptions {
            max_hold: Some(Duration::from_secs(3600)),
            ..Default::default()
        };
        assert_eq!(limit_reached(&roomy, &shared, ttl), None);
    }
}
