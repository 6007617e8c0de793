//! `Redlock`: the cheap-to-clone handle that takes locks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backoff;
use crate::builder::RedlockBuilder;
use crate::error::{BuildError, Error};
use crate::fence;
use crate::lock::Lock;
use crate::node::NodeId;
use crate::notify::Notifier;
use crate::options::{LockOptions, WatchdogOptions};
use crate::quorum::Quorum;
use crate::token::OwnerToken;

/// A handle to N independent Redis masters that takes distributed locks.
///
/// Cloning is cheap (an `Arc` inside); clones share the connections.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// # let urls = cluster.urls();
/// use redquorum::Redlock;
///
/// let redlock = Redlock::builder().nodes(&urls).build()?;
/// let lock = redlock.lock("reports:nightly").await?;
/// // ... the critical section, finished before lock.deadline() ...
/// lock.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Redlock {
    quorum: Arc<Quorum>,
    key_prefix: Arc<str>,
    node_timeout: Duration,
    options: LockOptions,
    /// How `Lock::auto_extend` and `with_lock` extend locks taken here.
    watchdog: WatchdogOptions,
    /// Wakes `lock()` waiters on release; shared by clones.
    notifier: Arc<Notifier>,
}

impl Redlock {
    /// Starts a [`RedlockBuilder`].
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder();
    /// ```
    pub fn builder() -> RedlockBuilder {
        RedlockBuilder::default()
    }

    pub(crate) fn new(
        quorum: Arc<Quorum>,
        key_prefix: Arc<str>,
        node_timeout: Duration,
        options: LockOptions,
    ) -> Self {
        Self {
            quorum,
            key_prefix,
            node_timeout,
            options,
            watchdog: WatchdogOptions::default(),
            notifier: Arc::new(Notifier::new(Vec::new(), Duration::ZERO)),
        }
    }

    /// Uses `notifier` (the nodes' subscriber connections) to wake waiters.
    pub(crate) fn with_notifier(mut self, notifier: Notifier) -> Self {
        self.notifier = Arc::new(notifier);
        self.quorum.set_notifier(Arc::clone(&self.notifier));
        self
    }

    /// A handle on the same nodes that locks with other options.
    ///
    /// # Errors
    ///
    /// [`BuildError::ZeroTtl`] or [`BuildError::NodeTimeoutNotBelowTtl`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use std::time::Duration;
    /// use redquorum::{LockOptions, Redlock};
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?;
    /// let short = redlock.with_options(&LockOptions { ttl: Duration::from_secs(1), ..Default::default() })?;
    /// let lock = short.try_lock("cache:warm").await?;
    /// assert!(lock.validity() <= Duration::from_secs(1));
    /// # Ok(()) }
    /// ```
    pub fn with_options(&self, options: &LockOptions) -> Result<Redlock, BuildError> {
        options.validate(self.node_timeout)?;
        self.watchdog.validate(options.ttl)?;
        Ok(Self {
            options: *options,
            ..self.clone()
        })
    }

    /// A handle on the same nodes whose locks the watchdog extends with `watchdog`.
    ///
    /// # Errors
    ///
    /// [`BuildError::ExtendBeforeOutOfRange`] when `extend_before` is zero or
    /// not below the TTL.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use std::time::Duration;
    /// use redquorum::{Redlock, WatchdogOptions};
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?;
    /// let capped = redlock.with_watchdog(&WatchdogOptions {
    ///     max_hold: Some(Duration::from_secs(3600)),
    ///     ..Default::default()
    /// })?;
    /// assert_eq!(capped.watchdog().max_hold, Some(Duration::from_secs(3600)));
    /// # Ok(()) }
    /// ```
    pub fn with_watchdog(&self, watchdog: &WatchdogOptions) -> Result<Redlock, BuildError> {
        watchdog.validate(self.options.ttl)?;
        Ok(Self {
            watchdog: *watchdog,
            ..self.clone()
        })
    }

    /// The watchdog options for locks taken with this handle.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.watchdog().max_extensions, None);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn watchdog(&self) -> &WatchdogOptions {
        &self.watchdog
    }

    /// The options this handle locks with.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.options().ttl, std::time::Duration::from_secs(10));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn options(&self) -> &LockOptions {
        &self.options
    }

    /// The nodes, in configured order.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.nodes().count(), 3);
    /// # Ok(()) }
    /// ```
    pub fn nodes(&self) -> impl Iterator<Item = &NodeId> {
        self.quorum.node_ids()
    }

    /// How many nodes an operation needs: `N/2 + 1`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(5)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.quorum(), 3);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn quorum(&self) -> usize {
        self.quorum.quorum()
    }

    /// Every node's health as of its last probe (role, persistence, eviction
    /// policy, uptime, and whether its votes are refused now). Waits for the
    /// first connection attempts on first use; never probes itself.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads cached state.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// for (node, health) in redlock.health().await {
    ///     println!("{node}: {health}"); // "master, not durable, maxmemory-policy noeviction, uptime 3s"
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn health(&self) -> Vec<(NodeId, crate::health::NodeHealth)> {
        self.quorum.health().await
    }

    /// The Redis key that holds `resource`'s lock on every node.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.key("orders:42"), "lock:orders:42");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn key(&self, resource: &str) -> String {
        format!("{}{resource}", self.key_prefix)
    }

    /// Makes one attempt to take `resource` on a quorum.
    ///
    /// Unlike `tokio::sync::Mutex::try_lock` this is `async`: it needs one
    /// round trip to the nodes. It never waits for another holder.
    ///
    /// # Errors
    ///
    /// - [`Error::Contended`]: another owner holds it on enough nodes.
    /// - [`Error::Unavailable`]: too few nodes answered in time.
    /// - [`Error::Expired`]: the quorum came after the lease ran out.
    /// - [`Error::FenceUnavailable`]: the quorum was won but the fencing
    ///   token could not be written back to a quorum (fencing is on).
    /// - [`Error::EmptyResource`].
    ///
    /// With fencing on (the default) the lock is returned only after its
    /// [`FenceToken`](crate::FenceToken) was stored on a quorum: each node
    /// proposes it in the acquire call, and one more concurrent round trip
    /// writes it back.
    ///
    /// In the first four cases every node that might hold our key was sent
    /// an unwind before the error was returned.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe in effect: if the future is dropped after the requests
    /// went out, a guard spawns the unwind on every node (on the same
    /// connections, so it lands after any acquire still in flight). No lock
    /// is returned and none is left behind beyond that unwind. Dropped during
    /// fencing, the lock already won is dropped too, and its `Drop` releases
    /// it in the background; fence counters may have been raised, which is
    /// harmless (they may run ahead, never behind).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let held = redlock.try_lock("cron:cleanup").await?;
    /// let again = redlock.try_lock("cron:cleanup").await;
    /// assert!(matches!(again, Err(redquorum::Error::Contended { .. })));
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_lock(&self, resource: &str) -> Result<Lock, Error> {
        if resource.is_empty() {
            return Err(Error::EmptyResource);
        }
        let key = self.key(resource);
        let owner = OwnerToken::random();
        let ttl = self.options.ttl;
        let fence_key = self.options.fencing.then(|| fence::fence_key(&key));
        let (lease, proposal) = self
            .quorum
            .acquire(resource, &key, owner, ttl, fence_key.as_deref())
            .await?;
        let lock = Lock::new(
            Arc::clone(&self.quorum),
            resource.to_owned(),
            key,
            owner,
            ttl,
            lease.deadline,
            self.watchdog,
        );
        match fence_key {
            Some(fence_key) => self.fence(lock, &fence_key, proposal).await,
            None => Ok(lock),
        }
    }

    /// Writes back `lock`'s fencing token (the highest proposal of the nodes
    /// that granted it) before it is handed out; on failure releases the
    /// lock (dropping this future drops the lock, which releases it in the
    /// background). Without a proposal (none can be missing when the quorum
    /// was won, but a token is never made up) it runs both rounds.
    async fn fence(
        &self,
        mut lock: Lock,
        fence_key: &str,
        proposal: Option<i64>,
    ) -> Result<Lock, Error> {
        let start = Instant::now();
        let resource = lock.resource();
        let token = match proposal {
            Some(highest) => fence::commit(&self.quorum, resource, fence_key, highest).await,
            None => fence::issue(&self.quorum, resource, fence_key).await,
        };
        match token {
            Ok(token) if lock.is_valid() => {
                lock.set_fence(token);
                Ok(lock)
            }
            Ok(_) => {
                let (resource, ttl) = (lock.resource().to_owned(), lock.ttl());
                let _ = lock.release().await;
                Err(Error::Expired {
                    resource,
                    elapsed: start.elapsed(),
                    ttl,
                })
            }
            Err(error) => {
                let _ = lock.release().await;
                Err(error)
            }
        }
    }

    /// Takes `resource`, retrying until `wait` runs out.
    ///
    /// A waiter retries as soon as the holder's release is announced (the
    /// release script publishes it; one subscriber connection per node is
    /// shared by all waiters of this `Redlock` and its clones), or after the
    /// jittered backoff, whichever comes first: a lost notification, or a key
    /// that expired instead of being released, costs at most the backoff.
    /// Waiters on one resource in this process queue in FIFO order and only
    /// the first contends, so a release costs one attempt, not one per waiter.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] carrying the last attempt's error (and its
    /// per-node outcomes), or [`Error::EmptyResource`].
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock`](Self::try_lock): dropping it mid-attempt spawns the
    /// unwind; dropping it between attempts leaves nothing behind.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use std::time::Duration;
    /// use redquorum::{Error, LockOptions, Redlock};
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?;
    /// let held = redlock.lock("deploy").await?;
    /// let impatient = redlock.with_options(&LockOptions { wait: Duration::from_millis(200), ..Default::default() })?;
    /// let err = impatient.lock("deploy").await.unwrap_err();
    /// assert!(matches!(err, Error::WaitTimeout { .. }));
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock(&self, resource: &str) -> Result<Lock, Error> {
        let start = Instant::now();
        let deadline = start + self.options.wait;
        let pause = || backoff::retry_delay(self.options.retry_delay, self.options.retry_jitter);
        // Waiting joins the resource's line of local waiters (notify.rs),
        // woken by release notifications. If others already wait here, line
        // up behind them rather than race them: fewer requests per hand-off.
        let mut waiter = None;
        if !resource.is_empty()
            && !self.notifier.is_idle()
            && self.notifier.is_waited_on(&self.key(resource))
        {
            let line = self.notifier.waiter(&self.key(resource), deadline).await;
            let pause = pause().min(deadline.saturating_duration_since(Instant::now()));
            waiter.insert(line).wait(pause, deadline).await;
        }
        loop {
            let error = match self.try_lock(resource).await {
                Ok(lock) => {
                    if let Some(waiter) = waiter {
                        waiter.won();
                    }
                    return Ok(lock);
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
                // (a release may have come before the subscription did).
                None => waiter.insert(self.notifier.waiter(&self.key(resource), deadline).await),
            };
            // A release notification or the jittered backoff, whichever comes
            // first: a lost message only costs the backoff.
            waiter.wait(pause().min(deadline - now), deadline).await;
        }
    }
}

impl Redlock {
    /// The shared coordinator, for the other lock kinds' entry points.
    pub(crate) fn shared_quorum(&self) -> &Arc<Quorum> {
        &self.quorum
    }
}
