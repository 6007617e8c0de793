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
use crate::wait::first_try::Passed;
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
    /// One hold of the key at a time: a hold won here stands in the way of
    /// every other caller of this process.
    pub(crate) one_holder: bool,
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
        // The first attempt's turn at the key's gate (wait/first_try.rs).
        let mut first_try = None;
        if self.exclusive && self.keys.len() == 1 {
            // If others already wait here for this lock, line up behind them
            // rather than race them: fewer requests per hand-off. Else try
            // one at a time with the callers starting now, and line up
            // behind a hold one of them won.
            let line_up = if self.notifier.is_waited_on(self.keys[0]) {
                Some(None)
            } else if !self.one_holder {
                None
            } else {
                match self.notifier.first_try(self.keys[0], deadline).await {
                    Passed::Try(turn) => {
                        first_try = Some(turn);
                        None
                    }
                    Passed::HeldHere(held) => Some(Some(held)),
                    Passed::Late => None,
                }
            };
            if let Some(held) = line_up {
                let line = waiter.insert(self.notifier.waiter(&self.keys, true, deadline).await);
                // Listening now: its release wakes this line, unless it came first.
                if held.is_some_and(|held| held.still_held()) {
                    line.expect_release();
                }
                let pause = pause().min(left(Instant::now()));
                woken = line.wait(pause, deadline).await;
            }
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
            // The next caller at the gate passes now, knowing whether it won.
            if let Some(turn) = first_try.take() {
                if answer.is_ok() {
                    turn.won(Instant::now() + self.options.ttl);
                }
            }
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
