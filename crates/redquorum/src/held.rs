//! The lease core shared by the other lock kinds (reentrant, read, write):
//! deadline bookkeeping, owner-checked extend and release, background
//! release on drop, and the retry loop of their blocking `lock` forms.

use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use fred::types::Value;
use fred::types::scripts::Script;

use crate::backoff;
use crate::error::Error;
use crate::options::LockOptions;
use crate::quorum::{NodeCall, Quorum};

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
    pub(crate) deadline: Instant,
    extend: NodeCall,
    release: NodeCall,
    /// False once released or forgotten: `Drop` then has nothing to do.
    armed: bool,
}

impl Held {
    pub(crate) fn new(
        quorum: Arc<Quorum>,
        resource: String,
        ttl: Duration,
        deadline: Instant,
        extend: NodeCall,
        release: NodeCall,
    ) -> Self {
        Self {
            quorum,
            resource,
            ttl,
            deadline,
            extend,
            release,
            armed: true,
        }
    }

    pub(crate) fn validity(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    pub(crate) fn is_valid(&self) -> bool {
        Instant::now() < self.deadline
    }

    /// Renews on a quorum; on failure the old deadline stands.
    pub(crate) async fn extend(&mut self) -> Result<Duration, Error> {
        let lease = self
            .quorum
            .extend_with(&self.resource, self.ttl, Arc::clone(&self.extend))
            .await?;
        self.deadline = lease.deadline;
        Ok(self.validity())
    }

    /// Releases on every node; returns on how many it was released.
    pub(crate) async fn release(&mut self) -> Result<usize, Error> {
        let released = self
            .quorum
            .release_with(&self.resource, Arc::clone(&self.release))
            .await;
        self.armed = false;
        released
    }

    pub(crate) fn forget(&mut self) {
        self.armed = false;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.armed {
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
                self.held.deadline
            }

            /// Time left before the deadline (zero once passed).
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

            /// True while the deadline has not passed.
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
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("resource", &self.held.resource)
                    .field("ttl", &self.held.ttl)
                    .field("validity", &self.held.validity())
                    .finish()
            }
        }
    };
}
pub(crate) use held_accessors;
