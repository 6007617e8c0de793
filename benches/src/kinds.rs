//! Every other lock kind of redquorum behind the [`Locker`] trait, for
//! their benchmark rows beside the plain lock (`RedquorumLocker`).

use std::time::Instant;

use redquorum::{Leadership, Lock, MultiLock, Permit, Redlock, ReentrantLock, WriteLock};
use redquorum_harness::{Grant, Locker, Refusal};

use crate::locker::{REDQUORUM_COMMANDS, refusal_kind};

/// A lock kind other than the plain lock, taken exclusively on one
/// resource, so that its latency and hand-off compare with the plain lock's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// `ReentrantOwner::lock`, a fresh owner per acquire (so two workers contend).
    Reentrant,
    /// `Redlock::write_lock`.
    Write,
    /// `Redlock::lock_any` over the one resource.
    AnyOf,
    /// `Redlock::lock_all` over the one resource.
    AllOf,
    /// `Redlock::semaphore(resource, 1)`, `Semaphore::acquire`.
    Semaphore,
    /// `Redlock::election(resource)`, `Election::campaign("bench")`, `resign`.
    Election,
}

impl LockKind {
    /// Every kind, in the order the benchmark prints them.
    pub const ALL: [LockKind; 6] = [
        LockKind::Reentrant,
        LockKind::Write,
        LockKind::AnyOf,
        LockKind::AllOf,
        LockKind::Semaphore,
        LockKind::Election,
    ];

    /// The kind's name in the benchmark's tables and `--libs`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_benches::LockKind::AnyOf.name(), "any-of");
    /// ```
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Reentrant => "reentrant",
            LockKind::Write => "write",
            LockKind::AnyOf => "any-of",
            LockKind::AllOf => "all-of",
            LockKind::Semaphore => "semaphore",
            LockKind::Election => "election",
        }
    }
}

/// What a [`KindLocker`] holds.
#[derive(Debug)]
pub enum HeldKind {
    /// A reentrant hold.
    Reentrant(ReentrantLock),
    /// A write lock.
    Write(WriteLock),
    /// The lock `lock_any` took.
    AnyOf(Lock),
    /// The set `lock_all` took.
    AllOf(MultiLock),
    /// A semaphore permit.
    Semaphore(Permit),
    /// A leadership.
    Election(Leadership),
}

impl HeldKind {
    fn deadline(&self) -> Instant {
        match self {
            HeldKind::Reentrant(held) => held.deadline(),
            HeldKind::Write(held) => held.deadline(),
            HeldKind::AnyOf(held) => held.deadline(),
            HeldKind::AllOf(held) => held.deadline(),
            HeldKind::Semaphore(held) => held.deadline(),
            HeldKind::Election(held) => held.deadline(),
        }
    }

    async fn release(self) -> Result<usize, redquorum::Error> {
        match self {
            HeldKind::Reentrant(held) => held.release().await,
            HeldKind::Write(held) => held.release().await,
            HeldKind::AnyOf(held) => held.release().await,
            HeldKind::AllOf(held) => held.release().await,
            HeldKind::Semaphore(held) => held.release().await,
            HeldKind::Election(held) => held.resign().await,
        }
    }
}

/// One [`LockKind`] on each resource, through its blocking acquire.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
/// use redquorum_benches::{KindLocker, LockKind, Locker};
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
/// for kind in LockKind::ALL {
///     let locker = KindLocker::new(redlock.clone(), kind);
///     let grant = locker.acquire("r").await.unwrap();
///     locker.release(grant.held).await.unwrap();
/// }
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct KindLocker {
    redlock: Redlock,
    kind: LockKind,
}

impl KindLocker {
    /// `kind` on `redlock`'s nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
    /// let locker = redquorum_benches::KindLocker::new(redlock, redquorum_benches::LockKind::Write);
    /// # }
    /// ```
    #[must_use]
    pub fn new(redlock: Redlock, kind: LockKind) -> Self {
        Self { redlock, kind }
    }

    async fn take(&self, resource: &str) -> Result<HeldKind, redquorum::Error> {
        let redlock = &self.redlock;
        Ok(match self.kind {
            LockKind::Reentrant => {
                HeldKind::Reentrant(redlock.reentrant_owner().lock(resource).await?)
            }
            LockKind::Write => HeldKind::Write(redlock.write_lock(resource).await?),
            LockKind::AnyOf => HeldKind::AnyOf(redlock.lock_any(&[resource]).await?.1),
            LockKind::AllOf => HeldKind::AllOf(redlock.lock_all(&[resource]).await?),
            LockKind::Semaphore => {
                HeldKind::Semaphore(redlock.semaphore(resource, 1)?.acquire().await?)
            }
            LockKind::Election => {
                HeldKind::Election(redlock.election(resource)?.campaign("bench").await?)
            }
        })
    }
}

impl Locker for KindLocker {
    type Held = HeldKind;

    async fn acquire(&self, resource: &str) -> Result<Grant<HeldKind>, Refusal> {
        let held = self
            .take(resource)
            .await
            .map_err(|e| Refusal::new(refusal_kind(&e), e.to_string()))?;
        let deadline = held.deadline();
        Ok(Grant::new(held, String::new(), deadline))
    }

    async fn release(&self, held: HeldKind) -> Result<(), String> {
        held.release().await.map(|_| ()).map_err(|e| e.to_string())
    }

    fn client_commands(&self) -> &'static [&'static str] {
        REDQUORUM_COMMANDS
    }
}
