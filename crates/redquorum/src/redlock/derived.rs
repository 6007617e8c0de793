//! The handles derived from a [`Redlock`]: the same nodes and connections,
//! other lock options, watchdog, owner information, or an attempt observer.

use crate::attempt::{Attempt, AttemptObserver};
use crate::error::BuildError;
use crate::options::{LockOptions, WatchdogOptions};
use crate::protocol::owner_info::OwnerInfo;

use super::Redlock;

impl Redlock {
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

    /// A handle on the same nodes that stores `info` (host, process id, a
    /// note) with every hold it takes, for operators to read back
    /// ([`Redlock::inspect`], `redquorum status`). Costs a little on each
    /// node per acquire; off by default.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use redquorum::{OwnerInfo, Redlock};
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?
    ///     .with_owner_info(OwnerInfo::here("nightly report"));
    /// let lock = redlock.lock("reports").await?;
    /// let inspection = redlock.inspect("reports").await?;
    /// let (_, view) = inspection.nodes().next().unwrap();
    /// let info = view.expect("node read").holds()[0].owner_info().cloned().unwrap();
    /// assert_eq!(info.note(), "nightly report");
    /// lock.release().await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn with_owner_info(&self, info: OwnerInfo) -> Redlock {
        Self {
            owner_info: Some(info.encode().into()),
            ..self.clone()
        }
    }

    /// A handle on the same nodes that calls `observe` with each
    /// acquisition attempt it makes, every lock kind and every retry of a
    /// waiting acquire, just before the attempt is sent: its resource, kind
    /// and owner token ([`Attempt`]). A refused or dropped attempt never
    /// returns its token, yet may leave keys for a moment; this says whose
    /// they are. `observe` runs on the acquiring task: keep it short.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use redquorum::Redlock;
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?
    ///     .with_attempt_observer(|attempt| {
    ///         tracing::debug!(resource = attempt.resource(), owner = %attempt.owner(), "lock attempt");
    ///     });
    /// redlock.lock("reports").await?.release().await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn with_attempt_observer(
        &self,
        observe: impl Fn(&Attempt<'_>) + Send + Sync + 'static,
    ) -> Redlock {
        Self {
            attempts: Some(AttemptObserver::new(observe)),
            ..self.clone()
        }
    }
}
