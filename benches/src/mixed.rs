//! Every lock kind on the same names at once: the torture's default
//! workload. Each acquire draws a kind (plain, write, read, reentrant
//! through the one owner of its client group, a semaphore permit, any-of,
//! a multi-lock member, an election), so kinds meet on one resource and
//! their exclusion and sharing (`redquorum_harness::Share`) are checked
//! against each other, not only within one kind.

use std::sync::Mutex;
use std::time::Instant;

use rand::{Rng, SeedableRng};
use redquorum::Redlock;
use redquorum_harness::{Grant, Locker, Refusal};

use crate::kinds::{HeldKind, KindLocker};
use crate::lock_kind::LockKind;

/// The semaphore's permit count on every name in a mixed run: permits share
/// up to it, and the checker counts them.
pub const MIXED_PERMITS: usize = 2;

/// Each kind's weight in a mixed run, and whether its holders ask for a
/// fencing token: the plain lock most often, exclusive writers next (the
/// protected counter needs writes), readers (they must share), and every
/// other kind regularly.
///
/// The plain lock is the default lock, most users' lock, and most of its
/// users never ask for a token: the largest group (12) are plain holds
/// that never call `fence()`, so their record stays the string the plain
/// acquire wrote and the string's own extend and release run (a token's
/// write-back turns the record into a hash, whose operations are the
/// other kinds'). Plain holds that ask every time (6) come next. The
/// plain lock's bugs (a release or extension that ignores the owner of
/// the string, an extension that does not push its expiry) harm only when
/// two plain holds meet on a name, so they must meet often.
///
/// A semaphore's cap must bind: with 8 clients a name, permits (4) are
/// drawn often enough that a third contender regularly finds both permits
/// taken (at 2 in 32 it hardly ever did, and a semaphore that admitted
/// everyone escaped a 60 s run: `permit-without-slot`, issue 34's sweep).
const WEIGHTS: [(LockKind, bool, u32); 9] = [
    (LockKind::Plain, false, 12),
    (LockKind::Plain, true, 6),
    (LockKind::Write, true, 3),
    (LockKind::Read, true, 4),
    (LockKind::Reentrant, true, 2),
    (LockKind::Semaphore, true, 4),
    (LockKind::AnyOf, true, 1),
    (LockKind::AllOf, true, 1),
    (LockKind::Election, true, 1),
];

/// One [`KindLocker`] per kind on one handle, an acquire drawing its kind.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
/// use redquorum_benches::{Locker, MixedLocker};
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
/// let locker = MixedLocker::new(redlock, vec!["r".into()], 1);
/// let grant = locker.acquire("r").await.unwrap();
/// assert!(!grant.kind.is_empty());
/// locker.release(grant.held).await.unwrap();
/// # }
/// ```
#[derive(Debug)]
pub struct MixedLocker {
    lockers: Vec<(KindLocker, u32)>,
    rng: Mutex<rand::rngs::StdRng>,
}

impl MixedLocker {
    /// Every kind on `redlock` for a history (owner and fencing tokens), a
    /// multi-lock taking a neighbour among `resources`; draws with `seed`.
    #[must_use]
    pub fn new(redlock: Redlock, resources: Vec<String>, seed: u64) -> Self {
        let lockers = WEIGHTS
            .iter()
            .map(|&(kind, asks_fence, weight)| {
                let locker = KindLocker::for_history(redlock.clone(), kind)
                    .with_ring(resources.clone())
                    .mixed(MIXED_PERMITS);
                let locker = if asks_fence {
                    locker
                } else {
                    locker.without_fence()
                };
                (locker, weight)
            })
            .collect();
        Self {
            lockers,
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(seed)),
        }
    }

    /// One kind only (`redquorum torture --kind`), for a history.
    #[must_use]
    pub fn single(redlock: Redlock, kind: LockKind, resources: Vec<String>) -> Self {
        Self {
            lockers: vec![(
                KindLocker::for_history(redlock, kind).with_ring(resources),
                1,
            )],
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(0)),
        }
    }

    fn draw(&self) -> &KindLocker {
        let total: u32 = self.lockers.iter().map(|(_, w)| w).sum();
        let mut ticket = self
            .rng
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .gen_range(0..total);
        for (locker, weight) in &self.lockers {
            if ticket < *weight {
                return locker;
            }
            ticket -= weight;
        }
        &self.lockers[0].0
    }
}

impl Locker for MixedLocker {
    type Held = HeldKind;

    async fn acquire(&self, resource: &str) -> Result<Grant<HeldKind>, Refusal> {
        self.draw().acquire(resource).await
    }

    async fn extend(&self, held: &mut HeldKind) -> Result<Instant, Refusal> {
        self.lockers[0].0.extend(held).await
    }

    async fn release(&self, held: HeldKind) -> Result<(), String> {
        self.lockers[0].0.release(held).await
    }

    /// Every kind's locker shares one `Redlock`: shut down once.
    async fn close(&self) {
        self.lockers[0].0.close().await;
    }

    fn client_commands(&self) -> &'static [&'static str] {
        self.lockers[0].0.client_commands()
    }
}
