//! The one wait loop of every blocking acquire (`lock`, the reentrant,
//! read and write locks, `lock_any`, `lock_all`, a semaphore's `acquire`,
//! an election's `campaign`): retry with jittered backoff while the
//! failure is worth another attempt, until `wait` runs out, woken early by
//! release notifications on the lock keys waited for (wait/waiters.rs).

use std::future::Future;
use std::task::Poll;
use std::time::Instant;

use crate::error::Error;
use crate::options::LockOptions;
use crate::wait::backoff;
use crate::wait::notify::Notifier;
use crate::wait::waiters::Waiter;

/// What a blocking acquire waits on.
#[derive(Debug)]
pub(crate) struct Wait<'a> {
    pub(crate) options: &'a LockOptions,
    pub(crate) notifier: &'a Notifier,
    /// The lock keys whose releases may let an attempt succeed.
    pub(crate) keys: Vec<&'a str>,
    /// Exclusive waiters on one key take turns (only the head contends);
    /// others (readers, and `lock_any` / `lock_all` over several keys) are
    /// all woken by a release.
    pub(crate) exclusive: bool,
}

impl Wait<'_> {
    /// Runs `attempt` until it succeeds, fails in a way another attempt
    /// cannot fix, or the wait runs out ([`Error::WaitTimeout`] with the last
    /// attempt's error).
    ///
    /// Cancel safety: as cancel safe as one `attempt`; between attempts
    /// nothing is held.
    pub(crate) async fn until_acquired<T, F, Fut>(
        self,
        resource: &str,
        attempt: F,
    ) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut waiting = crate::metrics::Waiting::start();
        let result = self.wait_for(resource, attempt).await;
        waiting.finish(&result);
        result
    }

    async fn wait_for<T, F, Fut>(self, resource: &str, mut attempt: F) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let start = Instant::now();
        // `wait` is validated to fit (LockOptions::validate).
        let deadline = start + self.options.wait;
        let pause = || backoff::retry_delay(self.options.retry_delay, self.options.retry_jitter);
        let left = |now: Instant| deadline.saturating_duration_since(now);
        let mut waiter: Option<Waiter> = None;
        // Whether a release woke this waiter: it then tells the release when
        // its attempt is sent, so both leave in one call per node.
        let mut woken = false;
        // If others already wait here for this lock, line up behind them
        // rather than race them: fewer requests per hand-off.
        if self.exclusive && self.keys.len() == 1 && self.notifier.is_waited_on(self.keys[0]) {
            let line = self.notifier.waiter(&self.keys, true, deadline).await;
            let pause = pause().min(left(Instant::now()));
            woken = waiter.insert(line).wait(pause, deadline).await;
        }
        loop {
            let mut trying = std::pin::pin!(attempt());
            // The first poll sends the attempt (or queues it behind the
            // release that woke us).
            let first = futures::poll!(trying.as_mut());
            if let Some(waiter) = waiter.as_ref().filter(|_| woken) {
                waiter.attempt_sent();
            }
            let answer = match first {
                Poll::Ready(answer) => answer,
                Poll::Pending => trying.await,
            };
            let error = match answer {
                Ok(held) => {
                    if let Some(waiter) = waiter {
                        waiter.won();
                    }
                    return Ok(held);
                }
                Err(error) if error.is_retryable() => error,
                Err(error) => return Err(error),
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::WaitTimeout {
                    resource: resource.to_owned(),
                    waited: now - start,
                    last: Box::new(error),
                });
            }
            let waiter = match &mut waiter {
                Some(waiter) => waiter,
                // First wait: subscribe; the first `wait` then returns at once
                // for the head (a release may have come before the subscription did).
                None => waiter.insert(
                    self.notifier
                        .waiter(&self.keys, self.exclusive, deadline)
                        .await,
                ),
            };
            // A release notification or the jittered backoff, whichever comes
            // first: a lost message only costs the backoff.
            woken = waiter.wait(pause().min(left(now)), deadline).await;
        }
    }
}
