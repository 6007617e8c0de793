//! [`LeaseWatch`]: the holder's read-only view of its lease (lease/state.rs):
//! the deadline as the watchdog moves it, and the two signals to stop on,
//! [`LeaseWatch::at_risk`] and [`LeaseWatch::lost`].

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::lease::state::{AtRisk, Lease, LostReason};
use crate::protocol::token::OwnerToken;

/// A read-only, cheap-to-clone view of a held lock's lease: its deadline as
/// the watchdog moves it, and the lost-lock signal.
///
/// Get one from [`Lock::lease`](crate::Lock::lease) (or the `lease()` of
/// [`ReentrantLock`](crate::ReentrantLock), [`ReadLock`](crate::ReadLock),
/// [`WriteLock`](crate::WriteLock)); [`Redlock::with_lock`](crate::Redlock::with_lock)
/// hands one to its closure.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let lock = redlock.lock("jobs:reindex").await?;
/// let lease = lock.lease();
/// assert_eq!(lease.resource(), "jobs:reindex");
/// assert!(lease.is_valid());
/// lock.release().await?;
/// assert_eq!(lease.lost().await, redquorum::LostReason::Released);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaseWatch {
    shared: Arc<Lease>,
}

impl fmt::Debug for LeaseWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.borrow();
        f.debug_struct("LeaseWatch")
            .field("resource", &self.shared.resource)
            .field("owner", &self.shared.owner)
            .field(
                "validity",
                &state.deadline.saturating_duration_since(Instant::now()),
            )
            .field("lost", &state.lost)
            .field("extensions", &state.extensions)
            .finish()
    }
}

impl LeaseWatch {
    pub(crate) fn new(shared: Arc<Lease>) -> Self {
        Self { shared }
    }

    /// The resource name.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("holding {}", lease.resource());
    /// # }
    /// ```
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.shared.resource
    }

    /// The owner token stored on the nodes (for a reentrant hold, the hold's
    /// own token, after the owner id in its field; for a read or write lock,
    /// that reader's or writer's token).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("owner {}", lease.owner());
    /// # }
    /// ```
    #[must_use]
    pub fn owner(&self) -> OwnerToken {
        self.shared.owner
    }

    /// The current deadline; each extension moves it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// assert!(lease.deadline() > std::time::Instant::now() || !lease.is_valid());
    /// # }
    /// ```
    #[must_use]
    pub fn deadline(&self) -> Instant {
        self.shared.deadline()
    }

    /// Time left before the current deadline (zero once passed or lost).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("{:?} left", lease.validity());
    /// # }
    /// ```
    #[must_use]
    pub fn validity(&self) -> Duration {
        if self.shared.lost_reason().is_some() {
            return Duration::ZERO;
        }
        self.deadline().saturating_duration_since(Instant::now())
    }

    /// True while the lease is neither lost nor past its deadline.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// if !lease.is_valid() { /* stop touching the resource */ }
    /// # }
    /// ```
    #[must_use]
    pub fn is_valid(&self) -> bool {
        !self.validity().is_zero()
    }

    /// How many times the lease was extended (by the watchdog or `Lock::extend`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("extended {} times", lease.extensions());
    /// # }
    /// ```
    #[must_use]
    pub fn extensions(&self) -> u32 {
        self.shared.extensions()
    }

    /// True while a watchdog task for this lease is alive.
    ///
    /// It turns false once the task has ended, after release, forget, drop
    /// or loss; tests use it to check that no task is left behind.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("auto-extending: {}", lease.is_auto_extending());
    /// # }
    /// ```
    #[must_use]
    pub fn is_auto_extending(&self) -> bool {
        self.shared.running.load(Ordering::SeqCst) > 0
    }

    /// Resolves when the lease is lost, with the reason.
    ///
    /// Loss is final. Without a watchdog the lease is lost when its deadline
    /// passes ([`LostReason::Expired`]); with one, when an extension is
    /// refused, when retries cannot extend it before the deadline, or when an
    /// extension limit is reached. Releasing or dropping the lock resolves it
    /// with [`LostReason::Released`].
    ///
    /// The future owns what it needs (`'static`), so it can be kept while the
    /// lock is used or moved.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only observes; drop it and call `lost()` again at will.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use std::time::Duration;
    /// use redquorum::{LockOptions, LostReason, Redlock};
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?
    ///     .with_options(&LockOptions { ttl: Duration::from_millis(300), ..Default::default() })?;
    /// let lock = redlock.lock("no-watchdog").await?; // not auto-extended
    /// assert_eq!(lock.lease().lost().await, LostReason::Expired);
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static + use<> {
        let until = until_left(Arc::clone(&self.shared), Duration::ZERO);
        async move { until.await.err().unwrap_or(LostReason::Expired) }
    }
}

impl LeaseWatch {
    /// How little validity may be left before the lease is at risk
    /// ([`WatchdogOptions::stop_margin`](crate::WatchdogOptions::stop_margin)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("stop with {:?} left", lease.stop_margin());
    /// # }
    /// ```
    #[must_use]
    pub fn stop_margin(&self) -> Duration {
        self.shared.stop_margin
    }

    /// True when the lease is lost, or less validity than the stop margin is
    /// left (no extension has succeeded in time).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// if lease.is_at_risk() { /* stop touching the resource now */ }
    /// # }
    /// ```
    #[must_use]
    pub fn is_at_risk(&self) -> bool {
        self.validity() < self.shared.stop_margin
    }

    /// Resolves when the lease is at risk: less validity than the
    /// [stop margin](Self::stop_margin) is left and no extension has moved
    /// the deadline (Chubby's *jeopardy*, Curator's *suspended*), or the
    /// lease is lost.
    ///
    /// With a healthy watchdog this never happens: it extends when
    /// `extend_before` is left, which is more than the margin. It happens
    /// when extensions keep failing (nodes unreachable or slow), or without
    /// a watchdog, a margin before the deadline. It is the holder's cue to
    /// stop while there is still time: after the deadline another holder
    /// may be granted. An extension that succeeds later ends the risk; call
    /// `at_risk()` again to wait for the next one.
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
    /// use redquorum::{AtRisk, LockOptions, Redlock};
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?
    ///     .with_options(&LockOptions { ttl: Duration::from_millis(600), ..Default::default() })?;
    /// let lock = redlock.lock("no-watchdog").await?; // not auto-extended
    /// let lease = lock.lease();
    /// assert!(matches!(lease.at_risk().await, AtRisk::Expiring { .. }));
    /// assert!(lease.is_valid()); // still a margin before the deadline
    /// # Ok(()) }
    /// ```
    pub fn at_risk(&self) -> impl Future<Output = AtRisk> + Send + 'static + use<> {
        let until = until_left(Arc::clone(&self.shared), self.shared.stop_margin);
        async move {
            match until.await {
                Ok(left) => AtRisk::Expiring { left },
                Err(reason) => AtRisk::Lost(reason),
            }
        }
    }
}

/// Resolves once less than `left` of validity is left (with what is left),
/// or the lease is declared lost (with the reason), whichever comes first.
/// Bounded: each round ends with a state change or the point passing, and
/// the deadline moves only with extensions (each a quorum round trip).
async fn until_left(shared: Arc<Lease>, left: Duration) -> Result<Duration, LostReason> {
    let mut state = shared.state.subscribe();
    loop {
        let (deadline, lost) = {
            let now = state.borrow_and_update();
            (now.deadline, now.lost.clone())
        };
        if let Some(reason) = lost {
            return Err(reason);
        }
        let point = deadline.checked_sub(left).unwrap_or(deadline);
        let now = Instant::now();
        if now >= point {
            return Ok(deadline.saturating_duration_since(now));
        }
        tokio::select! {
            // `Lease` owns the sender and we hold `shared`: never closed.
            _ = state.changed() => {}
            () = tokio::time::sleep_until(point.into()) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::token::OwnerToken;

    fn lease(validity: Duration, margin: Duration) -> (Arc<Lease>, LeaseWatch) {
        let shared = Lease::new("r", OwnerToken::random(), Instant::now() + validity, margin);
        (Arc::clone(&shared), LeaseWatch::new(shared))
    }

    #[tokio::test]
    async fn at_risk_resolves_a_margin_before_the_deadline() {
        let (_shared, watch) = lease(Duration::from_millis(120), Duration::from_millis(60));
        assert!(!watch.is_at_risk());
        let risk = watch.at_risk().await;
        let AtRisk::Expiring { left } = risk else {
            panic!("{risk:?}")
        };
        assert!(
            left <= Duration::from_millis(60) && !left.is_zero(),
            "{left:?}"
        );
        assert!(watch.is_at_risk() && watch.is_valid());
    }

    #[tokio::test]
    async fn an_extension_before_the_margin_postpones_the_risk() {
        let (shared, watch) = lease(Duration::from_millis(200), Duration::from_millis(50));
        let at_risk = watch.at_risk();
        let extend = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            shared.extended(Instant::now() + Duration::from_secs(60));
        };
        let (risk, ()) = tokio::join!(
            tokio::time::timeout(Duration::from_millis(400), at_risk),
            extend
        );
        assert!(risk.is_err(), "at risk although extended: {risk:?}");
        assert!(!watch.is_at_risk());
    }

    #[tokio::test]
    async fn a_lost_lease_is_at_risk_with_its_reason() {
        let (shared, watch) = lease(Duration::from_secs(60), Duration::from_secs(1));
        shared.declare_lost(LostReason::NotHeld);
        assert_eq!(watch.at_risk().await, AtRisk::Lost(LostReason::NotHeld));
        assert!(watch.is_at_risk());
    }
}
