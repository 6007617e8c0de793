//! Ending a process cleanly: [`Redlock::shutdown`] releases what it holds
//! and stops the background tasks.

use crate::lease::state::LostReason;
use crate::redlock::Redlock;

impl Redlock {
    /// Releases every lock this process holds through this `Redlock` (and
    /// its clones: they share the nodes), waits for the releases, then
    /// closes the connections and stops every background task. Call it
    /// before `main` returns: a lock merely dropped is released by a
    /// background task, which a returning `main` cuts short, leaving the
    /// lock held until its TTL.
    ///
    /// Afterwards every lock of this `Redlock` is lost
    /// ([`LostReason::Released`]), and new lock calls fail with
    /// [`Error::Shutdown`](crate::Error::Shutdown). Each release is bounded by the node timeout.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe: dropped mid-way, some locks may be left to their
    /// TTL and some connections open; call it again to finish.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let lock = redlock.lock("report").await?;
    /// let lease = lock.lease();
    /// std::mem::forget(lock); // even a lock whose value is gone
    /// redlock.shutdown().await;
    /// assert!(!lease.is_valid());
    /// assert!(matches!(redlock.try_lock("report").await, Err(redquorum::Error::Shutdown)));
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(&self) {
        self.shared_quorum().shut_down();
        let holds = self.holds().take_all();
        let releases = holds.iter().map(|(claim, lease)| {
            lease.declare_lost(LostReason::Released);
            self.shared_quorum().release(claim)
        });
        for result in futures::future::join_all(releases).await {
            if let Err(error) = result {
                tracing::warn!(%error, "release at shutdown failed; the lock expires with its ttl");
            }
        }
        self.notifier().stop();
        self.shared_quorum().nodes().stop().await;
    }
}
