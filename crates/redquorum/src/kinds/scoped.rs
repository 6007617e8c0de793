//! Scoped locking: [`Redlock::with_lock`] runs a future while the lock is
//! held and auto-extended, and cancels it if the lease is lost.

use std::future::Future;

use crate::error::Error;
use crate::lease::state::LostReason;
use crate::lease::watch::LeaseWatch;
use crate::redlock::Redlock;

impl Redlock {
    /// Takes `resource` (as [`lock`](Self::lock) does, retrying within
    /// `wait`), runs `body` while the watchdog keeps the lease alive, then
    /// releases.
    ///
    /// `body` receives a [`LeaseWatch`] (resource, owner, deadline, `lost()`).
    /// Its output comes back unchanged as `Ok(output)`: when `body` returns a
    /// `Result`, the caller gets `Ok(Err(body_error))` for the body's own
    /// errors, so they are never confused with lock errors.
    ///
    /// If the lease is lost while `body` runs, `body`'s future is dropped at
    /// its next `.await` point (it is cancelled, so write it to be cancel
    /// safe), the lock is released on a best-effort basis, and the call
    /// returns [`Error::Lost`] (or [`Error::ExtensionLimit`] when a
    /// [`WatchdogOptions`](crate::WatchdogOptions) limit was reached). On normal exit the
    /// watchdog is stopped, any extension in flight is awaited, then the lock
    /// is released; a failed release is only logged (the keys expire with
    /// their TTL) because the body's output matters more.
    ///
    /// # Errors
    ///
    /// - The errors of [`lock`](Self::lock), when the lock is not taken.
    /// - [`Error::Lost`]: the lease was lost (refused or expired) while `body` ran.
    /// - [`Error::ExtensionLimit`]: the watchdog reached its limit while `body` ran.
    ///
    /// # Cancel safety
    ///
    /// Dropping this future drops `body` and the `Lock`: the watchdog stops
    /// and the lock is released in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let sent: Result<u32, std::io::Error> = redlock
    ///     .with_lock("newsletter:2026-11", |lease| async move {
    ///         assert!(lease.is_valid());
    ///         Ok(1200) // ... send the newsletter exactly once ...
    ///     })
    ///     .await?; // lock errors (Contended, Lost, ...) end here
    /// assert_eq!(sent?, 1200); // the body's own error, unchanged
    /// # Ok(()) }
    /// ```
    pub async fn with_lock<F, Fut, T>(&self, resource: &str, body: F) -> Result<T, Error>
    where
        F: FnOnce(LeaseWatch) -> Fut,
        Fut: Future<Output = T>,
    {
        let mut lock = self.lock(resource).await?;
        lock.auto_extend();
        let lease = lock.lease();
        let lost = lease.lost();
        let outcome = tokio::select! {
            // Prefer the loss: once the lease is gone the body's result cannot be trusted.
            biased;
            reason = lost => Err(reason),
            output = body(lease) => Ok(output),
        };
        let released = lock.release().await;
        match outcome {
            Ok(output) => {
                if let Err(error) = released {
                    tracing::debug!(%error, resource, "release after the body failed; the keys expire with their ttl");
                }
                Ok(output)
            }
            Err(LostReason::Limit { extensions, held }) => Err(Error::ExtensionLimit {
                resource: resource.to_owned(),
                extensions,
                held,
            }),
            Err(_) => Err(Error::Lost {
                resource: resource.to_owned(),
            }),
        }
    }
}
