//! The attempt observer: who tried to take which lock, with which owner
//! token, before the attempt is sent.
//!
//! An attempt that is refused or dropped never hands its token to the
//! caller, yet it may have set keys on some nodes for a moment (the lock
//! unwinds them). An operator who finds such a key, or a test harness
//! that must tell which attempt left one behind, needs the token of every
//! attempt, not only of the granted ones.

use std::fmt;
use std::sync::Arc;

use crate::protocol::OwnerToken;

/// One acquisition attempt, as the observer given to
/// [`Redlock::with_attempt_observer`](crate::Redlock::with_attempt_observer)
/// sees it, just before it is sent to the nodes.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// use std::sync::{Arc, Mutex};
/// use redquorum::Redlock;
///
/// let tried = Arc::new(Mutex::new(Vec::new()));
/// let seen = Arc::clone(&tried);
/// let redlock = Redlock::builder().nodes(cluster.urls()).build()?
///     .with_attempt_observer(move |attempt| {
///         seen.lock().unwrap().push((attempt.resource().to_owned(), attempt.owner()));
///     });
/// let lock = redlock.lock("orders:42").await?;
/// assert_eq!(*tried.lock().unwrap(), vec![("orders:42".to_owned(), lock.owner())]);
/// lock.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    resource: &'a str,
    kind: &'static str,
    owner: OwnerToken,
}

impl<'a> Attempt<'a> {
    pub(crate) fn new(resource: &'a str, kind: &'static str, owner: OwnerToken) -> Self {
        Self {
            resource,
            kind,
            owner,
        }
    }

    /// The resource (for several at once, the names, comma-separated).
    #[must_use]
    pub fn resource(&self) -> &'a str {
        self.resource
    }

    /// The lock kind: `lock`, `write`, `read`, `reentrant`, `permit`,
    /// `leader` (the names of the metrics' `kind` label).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// The owner token this attempt stores on the nodes: a granted hold's
    /// [`Lock::owner`](crate::Lock::owner); for a refused or dropped
    /// attempt, the token of the keys it may have left until its unwind.
    #[must_use]
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }
}

/// What a handle calls for each attempt (shared by its clones).
#[derive(Clone)]
pub(crate) struct AttemptObserver(Arc<dyn Fn(&Attempt<'_>) + Send + Sync>);

impl AttemptObserver {
    pub(crate) fn new(observe: impl Fn(&Attempt<'_>) + Send + Sync + 'static) -> Self {
        Self(Arc::new(observe))
    }

    pub(crate) fn observe(&self, attempt: &Attempt<'_>) {
        (self.0)(attempt);
    }
}

impl fmt::Debug for AttemptObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AttemptObserver")
    }
}
