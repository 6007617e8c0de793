//! redquorum behind the [`Locker`] trait, every lock kind: the one adapter
//! of the library, for the benchmarks (the plain lock and each other kind
//! beside it), `redquorum bench`, and `redquorum torture --kind` and the
//! scenario tests, which record each grant's owner and fencing token
//! ([`KindLocker::for_history`]).

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use redquorum::{
    Leadership, Lock, MultiLock, Permit, ReadLock, Redlock, ReentrantLock, ReentrantOwner,
    WriteLock,
};
use redquorum_harness::{Grant, Locker, Refusal, Share, note_attempt};

use crate::lock_kind::LockKind;

mod hand_over;
mod ring;
use crate::refusal::{REDQUORUM_COMMANDS, refusal_kind};

/// What a [`KindLocker`] holds.
#[derive(Debug)]
pub enum HeldKind {
    /// A plain lock.
    Plain(Lock),
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
    /// A read lock.
    Read(ReadLock),
}

/// Runs `$body` with `$held` bound to whichever lock `$value` holds: every
/// kind has the same lease methods (`held_methods!` in the library).
macro_rules! on_held {
    ($value:expr, $held:ident => $body:expr) => {
        match $value {
            HeldKind::Plain($held) => $body,
            HeldKind::Reentrant($held) => $body,
            HeldKind::Write($held) => $body,
            HeldKind::AnyOf($held) => $body,
            HeldKind::AllOf($held) => $body,
            HeldKind::Semaphore($held) => $body,
            HeldKind::Election($held) => $body,
            HeldKind::Read($held) => $body,
        }
    };
}

impl HeldKind {
    fn deadline(&self) -> Instant {
        on_held!(self, held => held.deadline())
    }

    /// The nodes whose votes granted it, as indices into `redlock`'s nodes
    /// (the order the run gave them, the audit's order).
    fn voters(&self, redlock: &Redlock) -> Vec<usize> {
        let granted = on_held!(self, held => held.granted_by());
        redlock
            .nodes()
            .enumerate()
            .filter(|(_, id)| granted.contains(id))
            .map(|(index, _)| index)
            .collect()
    }

    fn owner(&self) -> String {
        on_held!(self, held => held.owner().to_string())
    }

    async fn fence(&self) -> Result<u64, redquorum::Error> {
        on_held!(self, held => held.fence().await.map(|token| token.get()))
    }

    async fn extend(&mut self) -> Result<(), redquorum::Error> {
        on_held!(self, held => held.extend().await.map(|_| ()))
    }

    /// Release; for a leadership that is `resign`.
    async fn release(self) -> Result<usize, redquorum::Error> {
        on_held!(self, held => held.release().await)
    }
}

/// One [`LockKind`] on each resource, through its blocking acquire.
///
/// [`new`](Self::new) measures the lock alone: its grants carry neither the
/// owner token nor the fencing token (nothing is formatted or asked for
/// beyond the lock). [`for_history`](Self::for_history) is for a checked
/// history: each grant carries the owner token and the fencing token (one
/// write-back to a quorum per grant), and a release is `Ok` only when a
/// quorum of nodes confirmed it.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
/// use redquorum_adapter::{KindLocker, LockKind, Locker};
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
/// for kind in LockKind::BESIDE_PLAIN {
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
    for_history: bool,
    /// For a history: whether a grant asks for its fencing token (most
    /// users of the plain lock never do).
    asks_fence: bool,
    /// For `all-of`: the resources, in order; each set is a resource and
    /// one of its neighbours (empty: the resource alone).
    ring: Vec<String>,
    /// Which neighbour the next set takes: after, then before, in turn.
    turn: Arc<AtomicUsize>,
    /// For `reentrant`: the one owner every acquire goes through (its holds
    /// share); `None`: a fresh owner per acquire (they contend).
    owner: Option<ReentrantOwner>,
    /// For `semaphore`: its permit count.
    permits: usize,
    /// For `election`: campaign for at most the handle's wait, as every
    /// other kind's acquire waits (unbounded: until elected).
    bounded: bool,
}

impl KindLocker {
    /// `kind` on `redlock`'s nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// use redquorum_adapter::{KindLocker, LockKind, Locker};
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
    /// let locker = KindLocker::new(redlock, LockKind::Plain);
    /// let grant = locker.acquire("r").await.unwrap();
    /// assert_eq!(grant.fence, None);
    /// locker.release(grant.held).await.unwrap();
    /// # }
    /// ```
    #[must_use]
    pub fn new(redlock: Redlock, kind: LockKind) -> Self {
        Self {
            redlock,
            kind,
            for_history: false,
            asks_fence: true,
            ring: Vec::new(),
            turn: Arc::default(),
            owner: None,
            permits: 1,
            bounded: false,
        }
    }

    /// For a mixed run, where kinds meet on one name: `reentrant` takes
    /// every hold through one owner, whose holds share (a history records
    /// them as such); `semaphore` has `permits` permits, which share up to
    /// that count; `election` campaigns for at most the handle's wait (an
    /// endless campaign would keep its client from every other kind).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// use redquorum_adapter::{KindLocker, LockKind, Locker};
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
    /// let locker = KindLocker::new(redlock, LockKind::Reentrant).mixed(2);
    /// let outer = locker.acquire("r").await.unwrap();
    /// let inner = locker.acquire("r").await.unwrap(); // the same owner re-enters
    /// locker.release(inner.held).await.unwrap();
    /// locker.release(outer.held).await.unwrap();
    /// # }
    /// ```
    #[must_use]
    pub fn mixed(mut self, permits: usize) -> Self {
        self.owner = Some(self.redlock.reentrant_owner());
        self.permits = permits.max(1);
        self.bounded = true;
        self
    }

    /// How a hold of this locker may share its resource.
    fn share(&self) -> Option<Share> {
        match self.kind {
            LockKind::Read => Some(Share::Readers),
            LockKind::Reentrant => self.owner.as_ref().map(|o| Share::Owner {
                id: o.id().to_owned(),
            }),
            LockKind::Semaphore if self.permits > 1 => Some(Share::Permits {
                of: u32::try_from(self.permits).unwrap_or(u32::MAX),
            }),
            _ => None,
        }
    }

    /// As [`new`](Self::new), for a checked history: each grant carries its
    /// owner token and asks for its fencing token, and every attempt's token
    /// is told to the workload ([`note_attempt`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// use redquorum_adapter::{KindLocker, LockKind, Locker};
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
    /// for kind in [LockKind::Plain, LockKind::Semaphore] {
    ///     let locker = KindLocker::for_history(redlock.clone(), kind);
    ///     let grant = locker.acquire("r").await.unwrap();
    ///     assert_eq!(grant.owner.len(), 32);
    ///     assert!(grant.fence.is_some());
    ///     locker.release(grant.held).await.unwrap();
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn for_history(redlock: Redlock, kind: LockKind) -> Self {
        // Every attempt's token goes to the history, so a key a refused or
        // dropped attempt left is judged by that attempt's own end.
        let redlock =
            redlock.with_attempt_observer(|attempt| note_attempt(&attempt.owner().to_string()));
        Self {
            for_history: true,
            ..Self::new(redlock, kind)
        }
    }

    /// As [`for_history`](Self::for_history), but its grants never ask for
    /// a fencing token, as most users never do: a plain lock's acquire then
    /// proposes no token (the native `SET` alone on a node), and its record
    /// stays the string its acquire wrote.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// use redquorum_adapter::{KindLocker, LockKind, Locker};
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
    /// let locker = KindLocker::for_history(redlock, LockKind::Plain).without_fence();
    /// let grant = locker.acquire("r").await.unwrap();
    /// assert!(grant.tokenless && grant.fence.is_none());
    /// locker.release(grant.held).await.unwrap();
    /// # }
    /// ```
    #[must_use]
    pub fn without_fence(mut self) -> Self {
        self.asks_fence = false;
        self
    }

    /// Takes `resource` as this locker's kind; with the other resources the
    /// hold covers, as asked for (an all-of set), so that the checker judges
    /// the hold on each whatever the lock says it took.
    async fn take(&self, resource: &str) -> Result<(HeldKind, Vec<String>), redquorum::Error> {
        let redlock = &self.redlock;
        let mut also = Vec::new();
        let held = match self.kind {
            LockKind::Plain => HeldKind::Plain(redlock.lock(resource).await?),
            LockKind::Reentrant => HeldKind::Reentrant(match &self.owner {
                Some(owner) => owner.lock(resource).await?,
                None => redlock.reentrant_owner().lock(resource).await?,
            }),
            LockKind::Write => HeldKind::Write(redlock.write_lock(resource).await?),
            LockKind::AnyOf => HeldKind::AnyOf(redlock.lock_any(&[resource]).await?.1),
            LockKind::AllOf => {
                let set = self.set_of(resource);
                also.extend(
                    set.iter()
                        .filter(|name| **name != resource)
                        .map(|name| (*name).to_owned()),
                );
                HeldKind::AllOf(redlock.lock_all(&set).await?)
            }
            LockKind::Semaphore => {
                HeldKind::Semaphore(redlock.semaphore(resource, self.permits)?.acquire().await?)
            }
            LockKind::Election if self.bounded => HeldKind::Election(
                redlock
                    .election(resource)?
                    .campaign_waiting("bench")
                    .await?,
            ),
            LockKind::Election => {
                HeldKind::Election(redlock.election(resource)?.campaign("bench").await?)
            }
            LockKind::Read => HeldKind::Read(redlock.read_lock(resource).await?),
        };
        Ok((held, also))
    }
}

impl Locker for KindLocker {
    type Held = HeldKind;

    async fn acquire(&self, resource: &str) -> Result<Grant<HeldKind>, Refusal> {
        let (held, also) = self
            .take(resource)
            .await
            .map_err(|e| Refusal::new(refusal_kind(&e), e.to_string()))?;
        let deadline = held.deadline();
        if !self.for_history {
            return Ok(Grant::new(held, String::new(), deadline));
        }
        let owner = held.owner();
        let voters = held.voters(&self.redlock);
        // The one place a workload reads a lock's fencing token (the checker
        // requires tokens to increase in grant order, and the store refuses
        // stale ones). The write-back may fail (the lease ran out first, or
        // no quorum confirmed it): the holder then has no token and does
        // not touch a fenced store. A holder that never asks only reads it.
        let grant = if self.asks_fence {
            let fence = held.fence().await.ok();
            Grant::new(held, owner, deadline).with_fence(fence)
        } else {
            Grant::new(held, owner, deadline).without_token()
        }
        .with_kind(self.kind.name(), self.share())
        .covering(also)
        .voted_by(voters);
        // A leadership's watchdog extends it in the background.
        Ok(if self.kind == LockKind::Election {
            grant.renewing_itself()
        } else {
            grant
        })
    }

    /// A plain hold's lease ticket (`kinds/hand_over.rs`).
    fn hand_over(&self, held: HeldKind) -> redquorum_harness::HandOver<HeldKind> {
        Self::ticket_of(held)
    }

    async fn adopt(&self, ticket: &str) -> Result<Grant<HeldKind>, Refusal> {
        self.adopt_ticket(ticket).await
    }

    async fn extend(&self, held: &mut HeldKind) -> Result<Instant, Refusal> {
        match held.extend().await {
            Ok(()) => Ok(held.deadline()),
            Err(e) => Err(Refusal::new(refusal_kind(&e), e.to_string())),
        }
    }

    /// The library's result; for a history, `Ok` only when a quorum of
    /// nodes confirmed the release (the library returns `Ok` from one node
    /// on, as a release is best effort, and a benchmark takes that).
    async fn release(&self, held: HeldKind) -> Result<(), String> {
        let quorum = self.redlock.quorum();
        match held.release().await {
            Ok(released) if released >= quorum || !self.for_history => Ok(()),
            Ok(released) => Err(format!(
                "released on {released} nodes, fewer than a quorum of {quorum}"
            )),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Shuts the `Redlock` down: its releases' stragglers (sent in the
    /// background once a quorum confirmed) land within the node timeout
    /// instead of being cut when the group's runtime stops.
    async fn close(&self) {
        self.redlock.shutdown().await;
    }

    fn client_commands(&self) -> &'static [&'static str] {
        REDQUORUM_COMMANDS
    }
}
