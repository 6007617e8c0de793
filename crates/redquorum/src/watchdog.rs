//! The lease watchdog: a task that extends a held lock before its lease runs
//! out, and the lost-lock signal ([`LeaseWatch::lost`]) that tells the holder
//! when the lease is over.
//!
//! The lease state (deadline, loss, extension count) lives in a
//! `tokio::sync::watch` channel shared by the `Lock`, its watchdog task and
//! every [`LeaseWatch`], so a successful extension moves the deadline that all
//! of them see, and a loss wakes every `lost()` future at once (as etcd's
//! `Session.Done()` does) instead of each polling a flag.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::options::WatchdogOptions;
use crate::quorum::{Lease, NodeCall, Quorum};
use crate::token::OwnerToken;

/// Bound on extension attempts for one lease period; the deadline bounds them in time too.
const MAX_ATTEMPTS: u32 = 64;

/// Why a lease was lost.
///
/// # Examples
///
/// ```
/// use redquorum::LostReason;
///
/// assert_eq!(LostReason::Expired.to_string(), "the validity ran out before an extension succeeded");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LostReason {
    /// The deadline passed: no extension succeeded in time (nodes down or
    /// slow), or no watchdog was running.
    #[error("the validity ran out before an extension succeeded")]
    Expired,
    /// An extension was refused by a quorum: our key is gone or belongs to another owner.
    #[error("an extension was refused: the key is no longer ours on a quorum")]
    NotHeld,
    /// The watchdog reached `max_extensions` or `max_hold` and stopped extending.
    #[error("the extension limit was reached after {extensions} extensions and {held:?} held")]
    Limit {
        /// Extensions made before the limit.
        extensions: u32,
        /// Time from acquisition to the limit.
        held: Duration,
    },
    /// The holder released the lock (or dropped it, which releases it).
    #[error("the lock was released by its holder")]
    Released,
}

/// Why a lease is at risk: see [`LeaseWatch::at_risk`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum::AtRisk;
///
/// let risk = AtRisk::Expiring { left: Duration::from_millis(400) };
/// assert_eq!(risk.to_string(), "400ms of validity left and no extension has succeeded");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AtRisk {
    /// Less validity than the stop margin is left and no extension has
    /// succeeded (the nodes are unreachable, slow, or no watchdog runs).
    /// An extension may still succeed and end the risk; stop anyway.
    #[error("{left:?} of validity left and no extension has succeeded")]
    Expiring {
        /// The validity left when the risk was seen.
        left: Duration,
    },
    /// The lease is already lost.
    #[error("the lease is lost: {0}")]
    Lost(LostReason),
}

/// The lease as every observer sees it.
#[derive(Debug, Clone)]
pub(crate) struct LeaseState {
    deadline: Instant,
    lost: Option<LostReason>,
    extensions: u32,
}

/// State shared by a `Lock`, its watchdog task and its `LeaseWatch`es.
#[derive(Debug)]
pub(crate) struct Shared {
    resource: Arc<str>,
    owner: OwnerToken,
    acquired: Instant,
    /// At risk once less validity than this is left (see [`AtRisk`]).
    stop_margin: Duration,
    state: watch::Sender<LeaseState>,
    /// Live watchdog tasks: a guard inside each task decrements it when the
    /// task's future is dropped (finished or aborted), so this cannot lie.
    running: AtomicUsize,
}

impl Shared {
    pub(crate) fn new(
        resource: &str,
        owner: OwnerToken,
        deadline: Instant,
        stop_margin: Duration,
    ) -> Arc<Self> {
        let (state, _) = watch::channel(LeaseState {
            deadline,
            lost: None,
            extensions: 0,
        });
        Arc::new(Self {
            resource: resource.into(),
            owner,
            acquired: Instant::now(),
            stop_margin,
            state,
            running: AtomicUsize::new(0),
        })
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.state.borrow().deadline
    }

    pub(crate) fn lost_reason(&self) -> Option<LostReason> {
        self.state.borrow().lost.clone()
    }

    fn extensions(&self) -> u32 {
        self.state.borrow().extensions
    }

    /// Records a successful extension, unless the lease was already declared lost (loss is final).
    pub(crate) fn extended(&self, deadline: Instant) {
        self.state.send_if_modified(|state| {
            if state.lost.is_some() {
                return false;
            }
            state.deadline = deadline;
            state.extensions += 1;
            true
        });
    }

    /// Declares the lease lost; the first reason wins.
    pub(crate) fn declare_lost(&self, reason: LostReason) {
        self.state.send_if_modified(|state| {
            if state.lost.is_some() {
                return false;
            }
            state.lost = Some(reason);
            true
        });
    }
}

/// Decrements `Shared::running` when the watchdog task's future is dropped.
struct RunningGuard(Arc<Shared>);

impl RunningGuard {
    fn new(shared: Arc<Shared>) -> Self {
        shared.running.fetch_add(1, Ordering::SeqCst);
        Self(shared)
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A read-only, cheap-to-clone view of a held lock's lease: its deadline as
/// the watchdog moves it, and the lost-lock signal.
///
/// Get one from [`Lock::lease`](crate::Lock::lease) (or the `lease()` of
/// [`ReentrantLock`](crate::ReentrantLock), [`ReadLock`](crate::ReadLock),
/// [`WriteLock`](crate::WriteLock)); [`Redlock::with_lock`](crate::Redlock::with_lock)
/// hands one to its closure.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let lock = redlock.lock("jobs:reindex").await?;
/// let lease = lock.lease();
/// assert_eq!(lease.resource(), "jobs:reindex");
/// assert!(lease.is_valid());
/// lock.release().await?;
/// assert_eq!(lease.lost().await, redquorum::LostReason::Released);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct LeaseWatch {
    shared: Arc<Shared>,
}

impl fmt::Debug for LeaseWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.borrow();
        f.debug_struct("LeaseWatch")
            .field("resource", &self.shared.resource)
            .field("owner", &self.shared.owner)
            .field(
                "validity",
                &state.deadline.saturating_duration_since(Instant::now()),
            )
            .field("lost", &state.lost)
            .field("extensions", &state.extensions)
            .finish()
    }
}

impl LeaseWatch {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// The resource name.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("holding {}", lease.resource());
    /// # }
    /// ```
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.shared.resource
    }

    /// The owner token stored on the nodes (for a reentrant hold, the hold's
    /// own token, after the owner id in its field; for a read or write lock,
    /// that reader's or writer's token).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("owner {}", lease.owner());
    /// # }
    /// ```
    #[must_use]
    pub fn owner(&self) -> OwnerToken {
        self.shared.owner
    }

    /// The current deadline; each extension moves it.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// assert!(lease.deadline() > std::time::Instant::now() || !lease.is_valid());
    /// # }
    /// ```
    #[must_use]
    pub fn deadline(&self) -> Instant {
        self.shared.deadline()
    }

    /// Time left before the current deadline (zero once passed or lost).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("{:?} left", lease.validity());
    /// # }
    /// ```
    #[must_use]
    pub fn validity(&self) -> Duration {
        if self.shared.lost_reason().is_some() {
            return Duration::ZERO;
        }
        self.deadline().saturating_duration_since(Instant::now())
    }

    /// True while the lease is neither lost nor past its deadline.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// if !lease.is_valid() { /* stop touching the resource */ }
    /// # }
    /// ```
    #[must_use]
    pub fn is_valid(&self) -> bool {
        !self.validity().is_zero()
    }

    /// How many times the lease was extended (by the watchdog or `Lock::extend`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("extended {} times", lease.extensions());
    /// # }
    /// ```
    #[must_use]
    pub fn extensions(&self) -> u32 {
        self.shared.extensions()
    }

    /// True while a watchdog task for this lease is alive.
    ///
    /// It turns false once the task has ended, after release, forget, drop
    /// or loss; tests use it to check that no task is left behind.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("auto-extending: {}", lease.is_auto_extending());
    /// # }
    /// ```
    #[must_use]
    pub fn is_auto_extending(&self) -> bool {
        self.shared.running.load(Ordering::SeqCst) > 0
    }

    /// Resolves when the lease is lost, with the reason.
    ///
    /// Loss is final. Without a watchdog the lease is lost when its deadline
    /// passes ([`LostReason::Expired`]); with one, when an extension is
    /// refused, when retries cannot extend it before the deadline, or when an
    /// extension limit is reached. Releasing or dropping the lock resolves it
    /// with [`LostReason::Released`].
    ///
    /// The future owns what it needs (`'static`), so it can be kept while the
    /// lock is used or moved.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only observes; drop it and call `lost()` again at will.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use std::time::Duration;
    /// use redquorum::{LockOptions, LostReason, Redlock};
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?
    ///     .with_options(&LockOptions { ttl: Duration::from_millis(300), ..Default::default() })?;
    /// let lock = redlock.lock("no-watchdog").await?; // not auto-extended
    /// assert_eq!(lock.lease().lost().await, LostReason::Expired);
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> impl Future<Output = LostReason> + Send + 'static + use<> {
        let shared = Arc::clone(&self.shared);
        async move {
            let mut state = shared.state.subscribe();
            // Bounded: each round ends with a state change or the deadline
            // passing, and the deadline only moves a bounded number of times
            // per lease (each extension is a quorum round trip).
            loop {
                let (deadline, lost) = {
                    let now = state.borrow_and_update();
                    (now.deadline, now.lost.clone())
                };
                if let Some(reason) = lost {
                    return reason;
                }
                if Instant::now() >= deadline {
                    return LostReason::Expired;
                }
                tokio::select! {
                    // `Shared` owns the sender and we hold `shared`: never closed.
                    _ = state.changed() => {}
                    () = tokio::time::sleep_until(deadline.into()) => {}
                }
            }
        }
    }
}

impl LeaseWatch {
    /// How little validity may be left before the lease is at risk
    /// ([`WatchdogOptions::stop_margin`](crate::WatchdogOptions::stop_margin)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// println!("stop with {:?} left", lease.stop_margin());
    /// # }
    /// ```
    #[must_use]
    pub fn stop_margin(&self) -> Duration {
        self.shared.stop_margin
    }

    /// True when the lease is lost, or less validity than the stop margin is
    /// left (no extension has succeeded in time).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lease: &redquorum::LeaseWatch) {
    /// if lease.is_at_risk() { /* stop touching the resource now */ }
    /// # }
    /// ```
    #[must_use]
    pub fn is_at_risk(&self) -> bool {
        self.validity() < self.shared.stop_margin
    }

    /// Resolves when the lease is at risk: less validity than the
    /// [stop margin](Self::stop_margin) is left and no extension has moved
    /// the deadline (Chubby's *jeopardy*, Curator's *suspended*), or the
    /// lease is lost.
    ///
    /// With a healthy watchdog this never happens: it extends when
    /// `extend_before` is left, which is more than the margin. It happens
    /// when extensions keep failing (nodes unreachable or slow), or without
    /// a watchdog, a margin before the deadline. It is the holder's cue to
    /// stop while there is still time: after the deadline another holder
    /// may be granted. An extension that succeeds later ends the risk; call
    /// `at_risk()` again to wait for the next one.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only observes.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use std::time::Duration;
    /// use redquorum::{AtRisk, LockOptions, Redlock};
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?
    ///     .with_options(&LockOptions { ttl: Duration::from_millis(600), ..Default::default() })?;
    /// let lock = redlock.lock("no-watchdog").await?; // not auto-extended
    /// let lease = lock.lease();
    /// assert!(matches!(lease.at_risk().await, AtRisk::Expiring { .. }));
    /// assert!(lease.is_valid()); // still a margin before the deadline
    /// # Ok(()) }
    /// ```
    pub fn at_risk(&self) -> impl Future<Output = AtRisk> + Send + 'static + use<> {
        let shared = Arc::clone(&self.shared);
        async move {
            let mut state = shared.state.subscribe();
            // Bounded as `lost()` is: each round ends with a state change or
            // the risk point passing.
            loop {
                let (deadline, lost) = {
                    let now = state.borrow_and_update();
                    (now.deadline, now.lost.clone())
                };
                if let Some(reason) = lost {
                    return AtRisk::Lost(reason);
                }
                let risk_at = deadline.checked_sub(shared.stop_margin).unwrap_or(deadline);
                let now = Instant::now();
                if now >= risk_at {
                    return AtRisk::Expiring {
                        left: deadline.saturating_duration_since(now),
                    };
                }
                tokio::select! {
                    _ = state.changed() => {}
                    () = tokio::time::sleep_until(risk_at.into()) => {}
                }
            }
        }
    }
}

/// What the watchdog needs to extend one lock.
pub(crate) struct Extender {
    pub(crate) quorum: Arc<Quorum>,
    pub(crate) ttl: Duration,
    pub(crate) how: ExtendCall,
}

/// How one lock kind is extended on the nodes.
pub(crate) enum ExtendCall {
    /// A plain `Lock`: the owner-checked extend script on its key.
    Key(String),
    /// The other kinds (held.rs): their own per-node extend call.
    Node(NodeCall),
}

impl Extender {
    /// One quorum extension, with the validity check.
    async fn extend(&self, resource: &str, owner: OwnerToken) -> Result<Lease, Error> {
        match &self.how {
            ExtendCall::Key(key) => self.quorum.extend(resource, key, owner, self.ttl).await,
            ExtendCall::Node(call) => {
                self.quorum
                    .extend_with(resource, self.ttl, Arc::clone(call))
                    .await
            }
        }
    }
}

/// A running watchdog: dropping `stop` asks the task to end at its next pause.
#[derive(Debug)]
pub(crate) struct Watchdog {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Watchdog {
    /// Spawns the extension task on the runtime the `Redlock` was built on.
    pub(crate) fn spawn(extender: Extender, shared: Arc<Shared>, options: WatchdogOptions) -> Self {
        let (stop, stopped) = oneshot::channel();
        let running = RunningGuard::new(Arc::clone(&shared));
        let runtime = extender.quorum.runtime().clone();
        let task = runtime.spawn(async move {
            let _running = running;
            run(extender, shared, options, stopped).await;
        });
        Self { stop, task }
    }

    /// True once the task has ended (by itself, after a loss).
    pub(crate) fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops the task and waits for it, including any extension in flight,
    /// so a release sent afterwards is not overtaken by an extension.
    pub(crate) async fn stop(self) {
        drop(self.stop);
        let _ = self.task.await;
    }
}

/// How one lease period ended.
enum Period {
    Extended,
    Stopped,
    Lost(LostReason),
}

async fn run(
    extender: Extender,
    shared: Arc<Shared>,
    options: WatchdogOptions,
    mut stop: oneshot::Receiver<()>,
) {
    let extend_before = options.extend_before(extender.ttl);
    // Bounded in time by `max_hold` when set; otherwise this is the point of
    // the watchdog: it runs while the lock is held, and every exit path below
    // (stop, loss) ends it.
    loop {
        if shared.lost_reason().is_some() {
            return;
        }
        let deadline = shared.deadline();
        let extend_at = deadline.checked_sub(extend_before).unwrap_or(deadline);
        tokio::select! {
            biased;
            _ = &mut stop => return,
            () = tokio::time::sleep_until(extend_at.into()) => {}
        }
        if let Some(reason) = limit_reached(&options, &shared, extender.ttl) {
            shared.declare_lost(reason);
            return;
        }
        match extend_before_deadline(&extender, &shared, &options, deadline, &mut stop).await {
            Period::Extended => {}
            Period::Stopped => return,
            Period::Lost(reason) => {
                shared.declare_lost(reason);
                return;
            }
        }
    }
}

/// The limit the next extension would cross, if any.
fn limit_reached(options: &WatchdogOptions, shared: &Shared, ttl: Duration) -> Option<LostReason> {
    let extensions = shared.extensions();
    let held = shared.acquired.elapsed();
    let too_many = options.max_extensions.is_some_and(|max| extensions >= max);
    let too_long = options.max_hold.is_some_and(|max| held + ttl > max);
    (too_many || too_long).then_some(LostReason::Limit { extensions, held })
}

/// Extends with doubling pauses between failed attempts until it works, is
/// refused, the deadline passes, or the task is stopped. A stop is only
/// honoured between attempts, so an extension in flight always completes.
async fn extend_before_deadline(
    extender: &Extender,
    shared: &Shared,
    options: &WatchdogOptions,
    deadline: Instant,
    stop: &mut oneshot::Receiver<()>,
) -> Period {
    let mut pause = options.retry_delay;
    for _ in 0..MAX_ATTEMPTS {
        if Instant::now() >= deadline {
            return Period::Lost(LostReason::Expired);
        }
        let attempt = extender.extend(&shared.resource, shared.owner).await;
        match attempt {
            // An extension that lands after the old deadline cannot revive
            // the lease: observers may already have stopped on its loss.
            Ok(_) if Instant::now() >= deadline => return Period::Lost(LostReason::Expired),
            Ok(lease) => {
                shared.extended(lease.deadline);
                return Period::Extended;
            }
            Err(Error::NotHeld { .. }) => return Period::Lost(LostReason::NotHeld),
            Err(error) => {
                tracing::debug!(%error, resource = %shared.resource, "extension failed; retrying while validity remains");
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::select! {
            biased;
            _ = &mut *stop => return Period::Stopped,
            () = tokio::time::sleep(pause.min(left)) => {}
        }
        pause = pause.saturating_mul(2);
    }
    // Out of attempts: let the lease run out rather than hammer the nodes.
    tokio::select! {
        biased;
        _ = &mut *stop => Period::Stopped,
        () = tokio::time::sleep_until(deadline.into()) => Period::Lost(LostReason::Expired),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared_with(deadline: Instant) -> Arc<Shared> {
        Shared::new(
            "r",
            OwnerToken::random(),
            deadline,
            Duration::from_millis(20),
        )
    }

    #[test]
    fn loss_is_final_and_first_reason_wins() {
        let shared = shared_with(Instant::now() + Duration::from_secs(10));
        shared.declare_lost(LostReason::NotHeld);
        shared.declare_lost(LostReason::Released);
        shared.extended(Instant::now() + Duration::from_secs(60));
        assert_eq!(shared.lost_reason(), Some(LostReason::NotHeld));
        assert_eq!(shared.extensions(), 0);
        assert!(!LeaseWatch::new(shared).is_valid());
    }

    #[test]
    fn extension_moves_the_deadline_and_counts() {
        let shared = shared_with(Instant::now() + Duration::from_secs(1));
        let later = Instant::now() + Duration::from_secs(60);
        shared.extended(later);
        assert_eq!(shared.deadline(), later);
        assert_eq!(shared.extensions(), 1);
    }

    #[test]
    fn limits_trip_on_count_and_on_hold_time() {
        let shared = shared_with(Instant::now() + Duration::from_secs(1));
        let ttl = Duration::from_secs(1);
        let none = WatchdogOptions::default();
        assert_eq!(limit_reached(&none, &shared, ttl), None);
        let count = WatchdogOptions {
            max_extensions: Some(0),
            ..Default::default()
        };
        assert!(matches!(
            limit_reached(&count, &shared, ttl),
            Some(LostReason::Limit { extensions: 0, .. })
        ));
        let hold = WatchdogOptions {
            max_hold: Some(Duration::from_millis(500)),
            ..Default::default()
        };
        assert!(limit_reached(&hold, &shared, ttl).is_some());
        let roomy = WatchdogOptions {
            max_hold: Some(Duration::from_secs(3600)),
            ..Default::default()
        };
        assert_eq!(limit_reached(&roomy, &shared, ttl), None);
    }

    #[tokio::test]
    async fn lost_resolves_with_the_declared_reason() {
        let shared = shared_with(Instant::now() + Duration::from_secs(60));
        let lost = LeaseWatch::new(Arc::clone(&shared)).lost();
        let declare = async {
            tokio::task::yield_now().await;
            shared.declare_lost(LostReason::NotHeld);
        };
        let (reason, ()) = tokio::join!(lost, declare);
        assert_eq!(reason, LostReason::NotHeld);
    }

    #[tokio::test]
    async fn lost_without_extension_resolves_as_expired_at_the_deadline() {
        let deadline = Instant::now() + Duration::from_millis(50);
        let lost = LeaseWatch::new(shared_with(deadline)).lost().await;
        assert_eq!(lost, LostReason::Expired);
        assert!(Instant::now() >= deadline);
    }
}

#[cfg(test)]
mod at_risk_tests {
    use super::*;

    fn lease(validity: Duration, margin: Duration) -> (Arc<Shared>, LeaseWatch) {
        let shared = Shared::new("r", OwnerToken::random(), Instant::now() + validity, margin);
        (Arc::clone(&shared), LeaseWatch::new(shared))
    }

    #[tokio::test]
    async fn at_risk_resolves_a_margin_before_the_deadline() {
        let (_shared, watch) = lease(Duration::from_millis(120), Duration::from_millis(60));
        assert!(!watch.is_at_risk());
        let risk = watch.at_risk().await;
        let AtRisk::Expiring { left } = risk else {
            panic!("{risk:?}")
        };
        assert!(
            left <= Duration::from_millis(60) && !left.is_zero(),
            "{left:?}"
        );
        assert!(watch.is_at_risk() && watch.is_valid());
    }

    #[tokio::test]
    async fn an_extension_before_the_margin_postpones_the_risk() {
        let (shared, watch) = lease(Duration::from_millis(200), Duration::from_millis(50));
        let at_risk = watch.at_risk();
        let extend = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            shared.extended(Instant::now() + Duration::from_secs(60));
        };
        let (risk, ()) = tokio::join!(
            tokio::time::timeout(Duration::from_millis(400), at_risk),
            extend
        );
        assert!(risk.is_err(), "at risk although extended: {risk:?}");
        assert!(!watch.is_at_risk());
    }

    #[tokio::test]
    async fn a_lost_lease_is_at_risk_with_its_reason() {
        let (shared, watch) = lease(Duration::from_secs(60), Duration::from_secs(1));
        shared.declare_lost(LostReason::NotHeld);
        assert_eq!(watch.at_risk().await, AtRisk::Lost(LostReason::NotHeld));
        assert!(watch.is_at_risk());
    }
}
