//! `Lock`: a held lock, with its owner token and validity deadline.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::fence::FenceToken;
use crate::quorum::Quorum;
use crate::token::OwnerToken;

/// A lock held on a quorum of nodes until [`deadline`](Self::deadline).
///
/// Use it only before its deadline: after that another owner may hold the
/// resource. Dropping it releases in the background (best effort, never
/// blocking); call [`release`](Self::release) to know the outcome, or
/// [`forget`](Self::forget) to leave the keys to expire.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let lock = redlock.lock("inventory:sku-1").await?;
/// assert_eq!(lock.resource(), "inventory:sku-1");
/// assert!(lock.is_valid());
/// let released_on = lock.release().await?;
/// assert_eq!(released_on, 3);
/// # Ok(()) }
/// ```
#[must_use = "dropping a Lock releases it at once"]
pub struct Lock {
    quorum: Arc<Quorum>,
    resource: String,
    key: String,
    owner: OwnerToken,
    ttl: Duration,
    deadline: Instant,
    /// The fencing token, when the lock was taken with fencing on.
    fence: Option<FenceToken>,
    /// False once released or forgotten: `Drop` then has nothing to do.
    armed: bool,
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("resource", &self.resource)
            .field("owner", &self.owner)
            .field("ttl", &self.ttl)
            .field("validity", &self.validity())
            .field("fence", &self.fence)
            .finish()
    }
}

impl Lock {
    pub(crate) fn new(
        quorum: Arc<Quorum>,
        resource: String,
        key: String,
        owner: OwnerToken,
        ttl: Duration,
        deadline: Instant,
    ) -> Self {
        Self {
            quorum,
            resource,
            key,
            owner,
            ttl,
            deadline,
            fence: None,
            armed: true,
        }
    }

    /// Records the fencing token issued for this lock.
    pub(crate) fn set_fence(&mut self, fence: FenceToken) {
        self.fence = Some(fence);
    }

    /// The fencing token: strictly greater than the token of every lock on
    /// this resource granted before this one was asked for. `None` when
    /// [`LockOptions::fencing`](crate::LockOptions::fencing) was off.
    ///
    /// Send it with every write to the protected resource and have the
    /// resource refuse lower tokens (docs/fencing.md).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lock: &redquorum::Lock) {
    /// if let Some(fence) = lock.fence() {
    ///     println!("UPDATE accounts SET balance = 10, fence = {fence} WHERE id = 7 AND fence <= {fence}");
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn fence(&self) -> Option<FenceToken> {
        self.fence
    }

    /// The resource name, as given to `lock`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lock: &redquorum::Lock) {
    /// println!("holding {}", lock.resource());
    /// # }
    /// ```
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The Redis key holding this lock on each node.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lock: &redquorum::Lock) {
    /// assert!(lock.key().ends_with(lock.resource()));
    /// # }
    /// ```
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The random token stored in the key on each node.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lock: &redquorum::Lock) {
    /// println!("owner {}", lock.owner());
    /// # }
    /// ```
    #[must_use]
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }

    /// The lease each node grants (and each `extend` renews).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lock: &redquorum::Lock) {
    /// assert!(lock.validity() <= lock.ttl());
    /// # }
    /// ```
    #[must_use]
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The instant by which the holder must stop using the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn demo(lock: redquorum::Lock) {
    /// tokio::time::sleep_until(lock.deadline().into()).await; // the lease is over
    /// # }
    /// ```
    #[must_use]
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Time left before the deadline (zero once passed).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lock: &redquorum::Lock) {
    /// if lock.validity() < std::time::Duration::from_millis(100) { /* stop soon */ }
    /// # }
    /// ```
    #[must_use]
    pub fn validity(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// True while the deadline has not passed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lock: &redquorum::Lock) {
    /// assert!(lock.is_valid());
    /// # }
    /// ```
    #[must_use]
    pub fn is_valid(&self) -> bool {
        Instant::now() < self.deadline
    }

    /// Renews the lease on a quorum (owner-checked) and returns the new validity.
    ///
    /// On success the deadline moves to `start + ttl - elapsed - drift`. On
    /// failure the old deadline stands.
    ///
    /// # Errors
    ///
    /// - [`Error::NotHeld`]: our key is gone (expired, or taken by another
    ///   owner) on too many nodes.
    /// - [`Error::Unavailable`]: too few nodes answered.
    /// - [`Error::Expired`]: a quorum answered but too late.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping it leaves the lock as it was, or extended on
    /// some nodes, which only keeps our own key alive longer there.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let mut lock = redlock.lock("batch:7").await?;
    /// let validity = lock.extend().await?;
    /// assert!(validity > std::time::Duration::from_secs(9));
    /// lock.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn extend(&mut self) -> Result<Duration, Error> {
        let lease = self
            .quorum
            .extend(&self.resource, &self.key, self.owner, self.ttl)
            .await?;
        self.deadline = lease.deadline;
        Ok(self.validity())
    }

    /// Deletes our key on every node (owner-checked); returns on how many nodes it was deleted.
    ///
    /// # Errors
    ///
    /// - [`Error::NotHeld`]: no node still had our key and a quorum said so
    ///   (the lease had expired).
    /// - [`Error::Unavailable`]: no node released and too few answered; the
    ///   keys expire with their TTL.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if dropped mid-way, the lock's `Drop` sends the release
    /// again in the background (it is idempotent).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let lock = redlock.lock("payouts").await?;
    /// assert_eq!(lock.release().await?, 3);
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<usize, Error> {
        let released = self
            .quorum
            .release(&self.resource, &self.key, self.owner)
            .await;
        self.armed = false;
        released
    }

    /// Gives up the lock without releasing it: the keys expire with their TTL.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let lock = redlock.lock("once-per-ttl").await?;
    /// lock.forget();
    /// assert!(redlock.try_lock("once-per-ttl").await.is_err());
    /// # Ok(()) }
    /// ```
    pub fn forget(mut self) {
        self.armed = false;
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if self.armed {
            // Never block in Drop: spawn the release if a runtime is there, else leave it to the TTL.
            self.quorum
                .spawn_release(std::mem::take(&mut self.key), self.owner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_send_sync_static<T: Send + Sync + 'static>() {}
    fn is_send<T: Send>(_: &T) {}

    #[test]
    fn bounds() {
        is_send_sync_static::<Lock>();
        is_send_sync_static::<crate::Redlock>();
        is_send_sync_static::<crate::Error>();
        is_send_sync_static::<crate::BuildError>();
    }

    #[allow(dead_code, unused_must_use)]
    async fn futures_are_send(redlock: crate::Redlock, mut lock: Lock) {
        is_send(&redlock.try_lock("r"));
        is_send(&redlock.lock("r"));
        is_send(&lock.extend());
        is_send(&lock.release());
    }
}
