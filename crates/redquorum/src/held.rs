//! The lease core shared by the other lock kinds (reentrant, read, write):
//! the lease state (deadline, loss) shared with the watchdog, owner-checked
//! extend and release, fencing, background release on drop, and the retry
//! loop of their blocking `lock` forms.

use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use fred::types::Value;
use fred::types::scripts::Script;

use crate::backoff;
use crate::error::Error;
use crate::fence::{self, FenceToken};
use crate::options::{LockOptions, WatchdogOptions};
use crate::quorum::{NodeCall, Quorum};
use crate::redlock::Redlock;
use crate::token::OwnerToken;
use crate::watchdog::{ExtendCall, Extender, LeaseWatch, LostReason, Shared, Watchdog};

/// A script call with its keys and arguments fixed, runnable on any node.
pub(crate) fn script_call(
    script: &'static LazyLock<Script>,
    keys: Vec<String>,
    args: Vec<Value>,
) -> NodeCall {
    Arc::new(move |node| {
        let (keys, args) = (keys.clone(), args.clone());
        Box::pin(async move { node.call(script, keys, args).await })
    })
}

/// Milliseconds for PX/PEXPIRE, at least 1.
pub(crate) fn millis(d: Duration) -> Value {
    Value::from(i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1))
}

/// A lease held on a quorum: what every held lock kind has in common.
pub(crate) struct Held {
    pub(crate) quorum: Arc<Quorum>,
    pub(crate) resource: String,
    pub(crate) ttl: Duration,
    /// The deadline and loss state, shared with the watchdog and `LeaseWatch`es.
    pub(crate) lease: Arc<Shared>,
    /// How `auto_extend` runs (from the `Redlock` that took the lock).
    watchdog_options: WatchdogOptions,
    /// The running watchdog, if `auto_extend` was called.
    watchdog: Option<Watchdog>,
    /// The fencing token, when the lock was taken with fencing on.
    pub(crate) fence: Option<FenceToken>,
    extend: NodeCall,
    release: NodeCall,
    /// False once released or forgotten: `Drop` then has nothing to do.
    armed: bool,
}

impl Held {
    /// A lease granted by `redlock`'s quorum until `deadline`; `owner` is the
    /// token this hold stores on the nodes.
    pub(crate) fn new(
        redlock: &Redlock,
        resource: &str,
        owner: OwnerToken,
        deadline: Instant,
        extend: NodeCall,
        release: NodeCall,
    ) -> Self {
        Self {
            quorum: Arc::clone(redlock.shared_quorum()),
            resource: resource.to_owned(),
            ttl: redlock.options().ttl,
            lease: Shared::new(
                resource,
                owner,
                deadline,
                redlock.watchdog().stop_margin(redlock.options().ttl),
            ),
            watchdog_options: *redlock.watchdog(),
            watchdog: None,
            fence: None,
            extend,
            release,
            armed: true,
        }
    }

    /// Issues the fencing token (when `fencing` is on) before the lock is
    /// handed out, as `Redlock::try_lock` does; on failure releases the hold.
    /// Dropping the future drops the hold, whose `Drop` releases it.
    pub(crate) async fn fenced(mut self, fencing: bool, fence_key: &str) -> Result<Self, Error> {
        if !fencing {
            return Ok(self);
        }
        let start = Instant::now();
        match fence::issue(&self.quorum, &self.resource, fence_key).await {
            Ok(token) if self.is_valid() => {
                self.fence = Some(token);
                Ok(self)
            }
            Ok(_) => {
                let _ = self.release().await;
                Err(Error::Expired {
                    resource: self.resource.clone(),
                    elapsed: start.elapsed(),
                    ttl: self.ttl,
                })
            }
            Err(error) => {
                let _ = self.release().await;
                Err(error)
            }
        }
    }

    pub(crate) fn lease(&self) -> LeaseWatch {
        LeaseWatch::new(Arc::clone(&self.lease))
    }

    /// Zero once the deadline passed or the lease was declared lost.
    pub(crate) fn validity(&self) -> Duration {
        self.lease().validity()
    }

    pub(crate) fn is_valid(&self) -> bool {
        self.lease().is_valid()
    }

    /// Renews on a quorum; on failure the old deadline stands. A refusal
    /// declares the lease lost, and a lost lease is not revived.
    pub(crate) async fn extend(&mut self) -> Result<Duration, Error> {
        if self.lease.lost_reason().is_some() {
            return Err(Error::Lost {
                resource: self.resource.clone(),
            });
        }
        let extended = self
            .quorum
            .extend_with(&self.resource, self.ttl, Arc::clone(&self.extend))
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

    /// Starts the watchdog, unless it runs already or the lease is lost.
    pub(crate) fn auto_extend(&mut self) {
        let running = self.watchdog.as_ref().is_some_and(|w| !w.is_finished());
        if running || self.lease.lost_reason().is_some() {
            return;
        }
        let extender = Extender {
            quorum: Arc::clone(&self.quorum),
            ttl: self.ttl,
            how: ExtendCall::Node(Arc::clone(&self.extend)),
        };
        self.watchdog = Some(Watchdog::spawn(
            extender,
            Arc::clone(&self.lease),
            self.watchdog_options,
        ));
    }

    /// Releases on every node; returns on how many it was released. Stops
    /// the watchdog first (awaiting any extension in flight), so no
    /// extension follows the release.
    pub(crate) async fn release(&mut self) -> Result<usize, Error> {
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop().await;
        }
        let released = self
            .quorum
            .release_with(&self.resource, Arc::clone(&self.release))
            .await;
        self.armed = false;
        self.lease.declare_lost(LostReason::Released);
        released
    }

    /// Leaves the hold to expire; the watchdog (if any) stops at its next pause.
    pub(crate) fn forget(&mut self) {
        self.armed = false;
        self.watchdog = None;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Dropping `self.watchdog` (a field) stops its task at its next pause.
        if self.armed {
            self.lease.declare_lost(LostReason::Released);
            // Never block in Drop: spawn the release, or leave it to the TTL without a runtime.
            self.quorum.spawn_on_all(Arc::clone(&self.release));
        }
    }
}

/// Retries `attempt` with jittered backoff while it fails in a retryable way,
/// until `options.wait` runs out (the same policy as `Redlock::lock`).
pub(crate) async fn retry<T, F, Fut>(
    options: &LockOptions,
    resource: &str,
    mut attempt: F,
) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let start = Instant::now();
    let deadline = start + options.wait;
    loop {
        let error = match attempt().await {
            Ok(held) => return Ok(held),
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
        let pause = backoff::retry_delay(options.retry_delay, options.retry_jitter);
        tokio::time::sleep(pause.min(deadline - now)).await;
    }
}

/// The read-only accessors every held lock kind exposes, documented per type.
macro_rules! held_accessors {
    ($ty:ident) => {
        impl $ty {
            /// The resource name.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// println!("holding {}", lock.resource());
            /// # }
            /// ```
            #[must_use]
            pub fn resource(&self) -> &str {
                &self.held.resource
            }

            /// The lease each node grants (and each `extend` renews).
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// assert!(lock.validity() <= lock.ttl());
            /// # }
            /// ```
            #[must_use]
            pub fn ttl(&self) -> std::time::Duration {
                self.held.ttl
            }

            /// The instant by which the holder must stop relying on the lock.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// let _ = lock.deadline();
            /// # }
            /// ```
            #[must_use]
            pub fn deadline(&self) -> std::time::Instant {
                self.held.lease.deadline()
            }

            /// Time left before the deadline (zero once passed, or once the lease was declared lost).
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// println!("{:?} left", lock.validity());
            /// # }
            /// ```
            #[must_use]
            pub fn validity(&self) -> std::time::Duration {
                self.held.validity()
            }

            /// True while the deadline has not passed and the lease was not declared lost.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// assert!(lock.is_valid());
            /// # }
            /// ```
            #[must_use]
            pub fn is_valid(&self) -> bool {
                self.held.is_valid()
            }

            /// Gives up the lock without releasing it: it ends with its expiry.
            ///
            /// The watchdog, if running, stops (after any extension in
            /// flight), so the lease ends at the current deadline.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: redquorum::", stringify!($ty), ") {")]
            /// lock.forget();
            /// # }
            /// ```
            pub fn forget(mut self) {
                self.held.forget();
            }

            /// Starts the watchdog, as [`Lock::auto_extend`](crate::Lock::auto_extend):
            /// a background task extends the lease when a third of the TTL
            /// is left, until the lock is released, forgotten, dropped or
            /// lost (an extension refused, the validity run out, or a
            /// [`WatchdogOptions`](crate::WatchdogOptions) limit reached).
            /// Calling it again while the watchdog runs does nothing.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(mut lock: redquorum::", stringify!($ty), ") -> Result<(), redquorum::Error> {")]
            /// lock.auto_extend();
            /// assert!(lock.lease().is_auto_extending());
            /// lock.release().await?; // stops the watchdog first
            /// # Ok(()) }
            /// ```
            pub fn auto_extend(&mut self) {
                self.held.auto_extend();
            }

            /// A cheap, cloneable view of this lock's lease: its deadline as
            /// the watchdog moves it, and the [`lost`](crate::LeaseWatch::lost) signal.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// let lease = lock.lease();
            /// tokio::spawn(async move {
            ///     let reason = lease.lost().await;
            ///     eprintln!("lost {}: {reason}", lease.resource());
            /// });
            /// # }
            /// ```
            #[must_use]
            pub fn lease(&self) -> crate::LeaseWatch {
                self.held.lease()
            }

            /// Resolves when the lease is lost, with the reason; see [`LeaseWatch::lost`](crate::LeaseWatch::lost).
            ///
            /// # Cancel safety
            ///
            /// Cancel safe: it only observes.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(mut lock: redquorum::", stringify!($ty), ") -> Result<(), redquorum::Error> {")]
            /// lock.auto_extend();
            /// tokio::select! {
            ///     reason = lock.lost() => eprintln!("lost: {reason}"),
            ///     () = tokio::time::sleep(std::time::Duration::from_millis(50)) => { /* the work */ }
            /// }
            /// lock.release().await?;
            /// # Ok(()) }
            /// ```
            pub fn lost(
                &self,
            ) -> impl std::future::Future<Output = crate::LostReason> + Send + 'static + use<> {
                self.held.lease().lost()
            }

            /// The fencing token issued for this acquisition; `None` when
            /// [`LockOptions::fencing`](crate::LockOptions::fencing) was off.
            /// See docs/fencing.md and this type's `try_` constructor for what
            /// it orders.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// if let Some(fence) = lock.fence() {
            ///     println!("write with fence {fence}");
            /// }
            /// # }
            /// ```
            #[must_use]
            pub fn fence(&self) -> Option<crate::FenceToken> {
                self.held.fence
            }
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("resource", &self.held.resource)
                    .field("ttl", &self.held.ttl)
                    .field("validity", &self.held.validity())
                    .field("fence", &self.held.fence)
                    .finish()
            }
        }
    };
}
pub(crate) use held_accessors;
