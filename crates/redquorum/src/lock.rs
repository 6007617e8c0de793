//! `Lock`: a held lock, with its owner token and validity deadline.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::fence::FenceToken;
use crate::options::WatchdogOptions;
use crate::quorum::Quorum;
use crate::token::OwnerToken;
use crate::watchdog::{ExtendCall, Extender, LeaseWatch, LostReason, Shared, Watchdog};

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
    /// The deadline and loss state, shared with the watchdog and `LeaseWatch`es.
    lease: Arc<Shared>,
    /// How `auto_extend` runs (from the `Redlock` that took the lock).
    watchdog_options: WatchdogOptions,
    /// The running watchdog, if `auto_extend` was called.
    watchdog: Option<Watchdog>,
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
        watchdog_options: WatchdogOptions,
    ) -> Self {
        Self {
            lease: Shared::new(
                &resource,
                owner,
                deadline,
                watchdog_options.stop_margin(ttl),
            ),
            quorum,
            resource,
            key,
            owner,
            ttl,
            watchdog_options,
            watchdog: None,
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
        self.lease.deadline()
    }

    /// Time left before the deadline (zero once passed, or once the lease was declared lost).
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
        self.lease().validity()
    }

    /// True while the deadline has not passed and the lease was not declared lost.
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
        self.lease().is_valid()
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
    /// - [`Error::Lost`]: the lease was already declared lost (see
    ///   [`lost`](Self::lost)); a lost lock is not revived.
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
        if self.lease.lost_reason().is_some() {
            return Err(Error::Lost {
                resource: self.resource.clone(),
            });
        }
        let extended = self
            .quorum
            .extend(&self.resource, &self.key, self.owner, self.ttl)
            .await;
        match extended {
            Ok(lease) => {
                self.lease.extended(lease.deadline);
                Ok(self.validity())
            }
            Err(error) => {
                if matches!(error, Error::NotHeld { .. }) {
                    self.lease.declare_lost(LostReason::NotHeld);
                }
                Err(error)
            }
        }
    }

    /// Starts the watchdog: a background task that extends the lease when a
    /// third of the TTL is left (see [`WatchdogOptions`](crate::WatchdogOptions)),
    /// until the lock is released, forgotten, dropped or lost.
    ///
    /// Each extension is a quorum operation with the validity check. A failed
    /// extension is retried with doubling pauses while validity remains; the
    /// lease is declared lost (see [`lost`](Self::lost)) when an extension is
    /// refused, the validity runs out, or a limit is reached. Calling it again
    /// while the watchdog runs does nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let mut lock = redlock.lock("long-job").await?;
    /// lock.auto_extend();
    /// assert!(lock.lease().is_auto_extending());
    /// // ... work for longer than the TTL, watching lock.lost() ...
    /// lock.release().await?; // stops the watchdog first
    /// # Ok(()) }
    /// ```
    pub fn auto_extend(&mut self) {
        let running = self.watchdog.as_ref().is_some_and(|w| !w.is_finished());
        if running || self.lease.lost_reason().is_some() {
            return;
        }
        let extender = Extender {
            quorum: Arc::clone(&self.quorum),
            ttl: self.ttl,
            how: ExtendCall::Key(self.key.clone()),
        };
        self.watchdog = Some(Watchdog::spawn(
            extender,
            Arc::clone(&self.lease),
            self.watchdog_options,
        ));
    }

    /// A cheap, cloneable view of this lock's lease: its deadline as the
    /// watchdog moves it, and the [`lost`](LeaseWatch::lost) signal.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lock: &redquorum::Lock) {
    /// let lease = lock.lease();
    /// tokio::spawn(async move {
    ///     let reason = lease.lost().await;
    ///     eprintln!("lost {}: {reason}", lease.resource());
    /// });
    /// # }
    /// ```
    #[must_use]
    pub fn lease(&self) -> LeaseWatch {
        LeaseWatch::new(Arc::clone(&self.lease))
    }

    /// Resolves when the lease is lost, with the reason; see [`LeaseWatch::lost`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only observes.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use std::time::Duration;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let mut lock = redlock.lock("job").await?;
    /// lock.auto_extend();
    /// tokio::select! {
    ///     reason = lock.lost() => eprintln!("lost: {reason}"),
    ///     () = tokio::time::sleep(Duration::from_millis(50)) => { /* the work */ }
    /// }
    /// lock.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> impl std::future::Future<Output = LostReason> + Send + 'static + use<> {
        self.lease().lost()
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
    /// With a watchdog running, it first stops the watchdog and waits for
    /// any extension in flight, so no extension follows the release.
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
        crate::observe::validity_at_release(self.validity());
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop().await;
        }
        let released = self
            .quorum
            .release(&self.resource, &self.key, self.owner)
            .await;
        self.armed = false;
        self.lease.declare_lost(LostReason::Released);
        released
    }

    /// Gives up the lock without releasing it: the keys expire with their TTL.
    ///
    /// The watchdog, if running, stops (after any extension in flight), so
    /// the lease ends at the current deadline.
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
        // Dropping the watchdog handle tells its task to stop.
        self.watchdog = None;
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Dropping `self.watchdog` (a field) stops its task at its next pause.
        if self.armed {
            self.lease.declare_lost(LostReason::Released);
            // Never block in Drop: spawn the release on the Redlock's runtime (if it has shut
            // down, nothing runs and the keys expire with their TTL).
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
        is_send_sync_static::<crate::LeaseWatch>();
        is_send_sync_static::<crate::LostReason>();
    }

    #[allow(dead_code, unused_must_use)]
    async fn futures_are_send(redlock: crate::Redlock, mut lock: Lock) {
        is_send(&redlock.try_lock("r"));
        is_send(&redlock.lock("r"));
        is_send(&lock.extend());
        is_send(&lock.lost());
        is_send(&redlock.with_lock("r", |_lease| async {}));
        is_send(&lock.release());
    }
}
