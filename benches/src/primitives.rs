//! redquorum's semaphore and leader election behind the [`Locker`] trait,
//! for their benchmark rows beside the plain lock.

use redquorum::{Leadership, Permit, Redlock};
use redquorum_harness::{Grant, Locker, Refusal};

use crate::locker::{REDQUORUM_COMMANDS, refusal_kind};

/// A semaphore of `permits` on each resource: `Redlock::semaphore`,
/// `Semaphore::acquire`, `Permit::release`. With one permit it excludes as
/// the plain lock does, so their latencies and hand-offs compare.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
/// use redquorum_benches::{Locker, SemaphoreLocker};
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
/// let locker = SemaphoreLocker::new(redlock, 1);
/// let grant = locker.acquire("r").await.unwrap();
/// locker.release(grant.held).await.unwrap();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SemaphoreLocker {
    redlock: Redlock,
    permits: usize,
}

impl SemaphoreLocker {
    /// `permits` per resource.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
    /// let locker = redquorum_benches::SemaphoreLocker::new(redlock, 2);
    /// # }
    /// ```
    #[must_use]
    pub fn new(redlock: Redlock, permits: usize) -> Self {
        Self { redlock, permits }
    }
}

impl Locker for SemaphoreLocker {
    type Held = Permit;

    async fn acquire(&self, resource: &str) -> Result<Grant<Permit>, Refusal> {
        let refused = |e: redquorum::Error| Refusal::new(refusal_kind(&e), e.to_string());
        let semaphore = self
            .redlock
            .semaphore(resource, self.permits)
            .map_err(refused)?;
        let permit = semaphore.acquire().await.map_err(refused)?;
        let deadline = permit.deadline();
        Ok(Grant::new(permit, String::new(), deadline))
    }

    async fn release(&self, permit: Permit) -> Result<(), String> {
        permit
            .release()
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn client_commands(&self) -> &'static [&'static str] {
        REDQUORUM_COMMANDS
    }
}

/// Leader election on each resource: `Redlock::election`,
/// `Election::campaign` (value `bench`), `Leadership::resign`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
/// use redquorum_benches::{ElectionLocker, Locker};
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
/// let locker = ElectionLocker::new(redlock);
/// let grant = locker.acquire("r").await.unwrap();
/// locker.release(grant.held).await.unwrap();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ElectionLocker {
    redlock: Redlock,
}

impl ElectionLocker {
    /// Elections on `redlock`'s nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
    /// let locker = redquorum_benches::ElectionLocker::new(redlock);
    /// # }
    /// ```
    #[must_use]
    pub fn new(redlock: Redlock) -> Self {
        Self { redlock }
    }
}

impl Locker for ElectionLocker {
    type Held = Leadership;

    async fn acquire(&self, resource: &str) -> Result<Grant<Leadership>, Refusal> {
        let refused = |e: redquorum::Error| Refusal::new(refusal_kind(&e), e.to_string());
        let election = self.redlock.election(resource).map_err(refused)?;
        let leadership = election.campaign("bench").await.map_err(refused)?;
        let deadline = leadership.deadline();
        Ok(Grant::new(leadership, String::new(), deadline))
    }

    async fn release(&self, leadership: Leadership) -> Result<(), String> {
        leadership
            .resign()
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn client_commands(&self) -> &'static [&'static str] {
        REDQUORUM_COMMANDS
    }
}
