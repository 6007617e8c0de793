//! Every lock kind on the same names at once: the torture's default
//! workload. Each acquire draws a kind (plain, write, read, reentrant
//! through the one owner of its client group, a semaphore permit, any-of,
//! a multi-lock member, an election), so kinds meet on one resource and
//! their exclusion and sharing (`redquorum_harness::Share`) are checked
//! against each other, not only within one kind.

use std::sync::Mutex;
use std::time::{Duration, Instant};

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
/// that never call `fence()`, whose handles' acquires propose no token
/// (the native `SET` alone on a node). Plain holds that ask every time (6)
/// come next; their record stays the string too (a token's write-back
/// raises the counter only). The
/// plain lock's bugs (a release or extension that ignores the owner of
/// the string, an extension that does not push its expiry) harm only when
/// two plain holds meet on a name, so they must meet often.
///
/// A semaphore's cap must bind: with 8 clients a name, permits (8 in 39)
/// are drawn often enough that a third contender regularly finds both
/// permits taken (at 2 in 32 it hardly ever did, and a semaphore that
/// admitted everyone escaped a 60 s run: `permit-without-slot`, issue 34's
/// sweep; at 4 in 35, once a quarter of the sessions locked names of their
/// own, it escaped seed 2 again; at 8 in 39 it was caught on seeds 1-3).
///
/// An election's exclusion is broken only when two campaigns meet on a
/// name: at 1 in 38 campaigns did within 60 s on most seeds, but a
/// campaign that joined as a reader would (`shared-leadership`) escaped
/// seed 2 once hand-overs joined the default run (caught there at 11.4 s
/// without them, 13.6 s on seed 3, 44.8 s on seed 4); at 2 in 39 they
/// meet about four times as often.
///
/// Half the tokenless plain holds (6 of 12) are long jobs kept
/// alive by the library's watchdog (`auto_extend`), as users keep a lock
/// through work of unknown length: their extensions are the library's own
/// (retried while validity remains), sent under every fault and late on a
/// stalled or paused node, and their holds are the long ones the stuck-lock
/// force-releases take. A string record's extension that brought back a
/// hold gone from a node escaped every default run without them (the
/// harness's renewing plain holders without a token were a few a run:
/// `plain-extend-revives`).
const WEIGHTS: [Row; 10] = [
    row(LockKind::Plain, NO_TOKEN, 6),
    row(LockKind::Plain, KEPT, 6),
    row(LockKind::Plain, FENCED, 6),
    row(LockKind::Write, FENCED, 3),
    row(LockKind::Read, FENCED, 4),
    row(LockKind::Reentrant, FENCED, 2),
    row(LockKind::Semaphore, FENCED, 8),
    row(LockKind::AnyOf, FENCED, 1),
    row(LockKind::AllOf, FENCED, 1),
    row(LockKind::Election, FENCED, 2),
];

/// How a row's holders use the lock: whether they ask for a fencing token,
/// and whether the library's watchdog keeps their lease alive.
#[derive(Debug, Clone, Copy)]
struct Use {
    asks_fence: bool,
    kept: bool,
}

const FENCED: Use = Use {
    asks_fence: true,
    kept: false,
};
const NO_TOKEN: Use = Use {
    asks_fence: false,
    kept: false,
};
const KEPT: Use = Use {
    asks_fence: false,
    kept: true,
};

/// One kind, how it is used, and its weight.
type Row = (LockKind, Use, u32);

const fn row(kind: LockKind, how: Use, weight: u32) -> Row {
    (kind, how, weight)
}

/// How long a kept hold's job runs, in TTLs: one to two and a half, so the
/// watchdog extends it one to three times (at a third of the TTL left).
const KEPT_WORK_TTLS: (f64, f64) = (1.0, 2.5);

/// One [`KindLocker`] per kind on one handle, an acquire drawing its kind.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
/// use redquorum_adapter::{Locker, MixedLocker};
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
/// let locker = MixedLocker::new(redlock, vec!["r".into()], 1);
/// let grant = locker.acquire("r").await.unwrap();
/// assert!(!grant.kind.is_empty());
/// locker.release(grant.held).await.unwrap();
/// # }
/// ```
#[derive(Debug)]
pub struct MixedLocker {
    /// Each kind's locker, whether its holds are kept alive, its weight.
    lockers: Vec<(KindLocker, bool, u32)>,
    rng: Mutex<rand::rngs::StdRng>,
}

impl MixedLocker {
    /// Every kind on `redlock` for a history (owner and fencing tokens), a
    /// multi-lock taking a neighbour among `resources`; draws with `seed`.
    #[must_use]
    pub fn new(redlock: Redlock, resources: Vec<String>, seed: u64) -> Self {
        let lockers = WEIGHTS
            .iter()
            .map(|&(kind, how, weight)| {
                let locker = KindLocker::for_history(redlock.clone(), kind)
                    .with_ring(resources.clone())
                    .mixed(MIXED_PERMITS);
                let locker = if how.asks_fence {
                    locker
                } else {
                    locker.without_fence()
                };
                (locker, how.kept, weight)
            })
            .collect();
        Self {
            lockers,
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(seed)),
        }
    }

    /// The same, but no holder ever asks for a fencing token: the handle
    /// then never proposes one, and a plain acquire alone in its call goes
    /// to the node as `SET NX PX` (the lock users get who never call
    /// `fence()`; a handle proposes once any of its locks asked).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// use redquorum_adapter::{Locker, MixedLocker};
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
    /// let locker = MixedLocker::new(redlock, vec!["r".into()], 1).without_tokens();
    /// let grant = locker.acquire("r").await.unwrap();
    /// assert!(grant.fence.is_none());
    /// locker.release(grant.held).await.unwrap();
    /// # }
    /// ```
    #[must_use]
    pub fn without_tokens(self) -> Self {
        let lockers = (self.lockers.into_iter())
            .map(|(locker, kept, weight)| (locker.without_fence(), kept, weight))
            .collect();
        Self { lockers, ..self }
    }

    /// One kind only (`redquorum torture --kind`), for a history.
    #[must_use]
    pub fn single(redlock: Redlock, kind: LockKind, resources: Vec<String>) -> Self {
        Self {
            lockers: vec![(
                KindLocker::for_history(redlock, kind).with_ring(resources),
                false,
                1,
            )],
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(0)),
        }
    }

    fn rng(&self) -> std::sync::MutexGuard<'_, rand::rngs::StdRng> {
        self.rng
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A kind's locker, and whether its hold is kept alive.
    fn draw(&self) -> (&KindLocker, bool) {
        let total: u32 = self.lockers.iter().map(|(_, _, w)| w).sum();
        let mut ticket = self.rng().gen_range(0..total);
        for (locker, kept, weight) in &self.lockers {
            if ticket < *weight {
                return (locker, *kept);
            }
            ticket -= weight;
        }
        (&self.lockers[0].0, false)
    }
}

/// Starts the watchdog on a kept plain hold; its job's length.
fn keep_alive(held: &mut HeldKind, rng: &mut rand::rngs::StdRng) -> Option<Duration> {
    let HeldKind::Plain(lock) = held else {
        return None;
    };
    lock.auto_extend();
    let (low, high) = KEPT_WORK_TTLS;
    Some(lock.ttl().mul_f64(rng.gen_range(low..high)))
}

impl Locker for MixedLocker {
    type Held = HeldKind;

    async fn acquire(&self, resource: &str) -> Result<Grant<HeldKind>, Refusal> {
        let (locker, kept) = self.draw();
        let mut grant = locker.acquire(resource).await?;
        if !kept {
            return Ok(grant);
        }
        Ok(match keep_alive(&mut grant.held, &mut self.rng()) {
            Some(work) => grant.kept_alive(work),
            None => grant,
        })
    }

    /// A kept plain hold's deadline as its watchdog moves it; no later
    /// than now once the lease is lost (the watchdog failed, or a refused
    /// extension declared it lost).
    fn deadline(&self, held: &HeldKind) -> Option<Instant> {
        let HeldKind::Plain(lock) = held else {
            return None;
        };
        let deadline = lock.deadline();
        Some(if lock.is_valid() {
            deadline
        } else {
            deadline.min(Instant::now())
        })
    }

    /// A renewal counts its lease from its sending: `deadline = sent +
    /// ttl - drift`, so it was sent no earlier than `deadline - ttl`.
    fn renewal_sent(&self, held: &HeldKind) -> Option<Instant> {
        let HeldKind::Plain(lock) = held else {
            return None;
        };
        lock.deadline().checked_sub(lock.ttl())
    }

    /// A kept plain hold hears the lock's asks to let go
    /// (`Lock::release_asked`, which owns what it listens with).
    fn release_asked(&self, held: &HeldKind) -> Option<redquorum_harness::Asked> {
        let HeldKind::Plain(lock) = held else {
            return None;
        };
        Some(Box::pin(lock.release_asked()))
    }

    /// A plain hold's lease ticket; other kinds keep their holds.
    fn hand_over(&self, held: HeldKind) -> redquorum_harness::HandOver<HeldKind> {
        self.lockers[0].0.hand_over(held)
    }

    async fn adopt(&self, ticket: &str) -> Result<Grant<HeldKind>, Refusal> {
        self.lockers[0].0.adopt(ticket).await
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The renewal's sending the harness records is never later than the
    /// real one (the checker's force-release excuse needs no later a
    /// time), and within the drift allowance of it.
    #[tokio::test]
    async fn a_renewal_is_taken_as_sent_no_later_than_it_was() {
        let cluster = redquorum_harness::Cluster::start(3).expect("nodes");
        let ttl = Duration::from_secs(2);
        let redlock = Redlock::builder()
            .nodes(cluster.urls())
            .ttl(ttl)
            .build()
            .expect("redlock");
        let locker = MixedLocker::new(redlock.clone(), vec!["r".into()], 1);
        let mut held = HeldKind::Plain(redlock.try_lock("r").await.expect("free"));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let before = Instant::now();
        let HeldKind::Plain(lock) = &mut held else {
            unreachable!()
        };
        lock.extend().await.expect("extended");
        let after = Instant::now();
        let sent = locker.renewal_sent(&held).expect("a plain hold");
        // Sent between `before` and `after`; taken as at most the drift
        // allowance (1% of the TTL and 2 ms) and the call's time earlier.
        assert!(sent <= after, "{sent:?} after {after:?}");
        let slack = Duration::from_millis(22) + (after - before);
        assert!(sent + slack >= before, "{:?} too early", before - sent);
        locker.release(held).await.expect("released");
    }
}
