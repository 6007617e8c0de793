//! The workload runner: K clients × M resources, each critical section a
//! read-modify-write of a protected counter kept in a separate Redis (so an
//! overlap loses an update, and the checker names it), recorded into a
//! [`History`]. Holders come in a mix of kinds ([`Holder`]): brief ones,
//! ones that use the lease until just before its deadline, and ones that
//! pause past it (a GC pause) and then extend or write anyway.
//!
//! Clients run on the caller's runtime ([`run_workload`]), or in groups,
//! each group on a runtime and thread of its own with its own lock client
//! ([`run_workload_groups`]): a group can then be paused as a whole, as a
//! stop-the-world pause freezes a client process.
//!
//! The runner is generic over [`Locker`] (`locker.rs`), so that this crate
//! does not depend on the lock library (which dev-depends on this crate for
//! its doc tests).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use super::cancel::DropPlan;
use super::locker::{Grant, Locker};
use super::store::ProtectedStore;
use crate::evidence::{Dropped, Extension, History, Holder, Outcome, Session};
use crate::faults::ClientPauser;

/// What the workload does.
///
/// # Examples
///
/// ```
/// let config = redquorum_harness::WorkloadConfig { clients: 4, ..Default::default() };
/// assert_eq!(config.resources.len(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    /// Concurrent clients. Default: 8.
    pub clients: usize,
    /// Resource names. Default: `["r0", "r1"]`.
    pub resources: Vec<String>,
    /// How long clients keep starting sessions. Default: 3 s.
    pub duration: Duration,
    /// Hold time range of a brief holder (uniform). Default: 0–50 ms.
    pub hold: (Duration, Duration),
    /// An honest holder writes only with at least this much validity left. Default: 250 ms.
    pub write_margin: Duration,
    /// Pause after a failed acquire, at most (uniform from 0). Default: 20 ms.
    pub backoff: Duration,
    /// The holder mix: each session draws a kind with these weights. Default: brief only.
    pub holders: Vec<(Holder, u32)>,
    /// How far past its deadline a pausing holder sleeps. Default: 100 ms.
    pub pause_past_validity: Duration,
    /// Holders check their deadline before writing (honest). Off: every
    /// holder writes whatever its lease says, as the clients in Jepsen's
    /// lock tests do. Default: on.
    pub check_before_write: bool,
    /// Reads and writes carry the fencing token (when the lock has one),
    /// and the store refuses tokens below the highest it has seen. Default: off.
    pub fenced_store: bool,
    /// The chance that an acquire or a release is dropped part-way
    /// (raced against a random timer up to `drop_within`). Default: 0.
    pub drop_chance: f64,
    /// The longest such timer. Default: 50 ms.
    pub drop_within: Duration,
    /// Random seed (clients use `seed + index`). Default: 1.
    pub seed: u64,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            clients: 8,
            resources: vec!["r0".into(), "r1".into()],
            duration: Duration::from_secs(3),
            hold: (Duration::ZERO, Duration::from_millis(50)),
            write_margin: Duration::from_millis(250),
            backoff: Duration::from_millis(20),
            holders: vec![(Holder::Brief, 1)],
            pause_past_validity: Duration::from_millis(100),
            check_before_write: true,
            fenced_store: false,
            drop_chance: 0.0,
            drop_within: Duration::from_millis(50),
            seed: 1,
        }
    }
}

/// Runs the workload to its end and returns the history.
///
/// # Cancel safety
///
/// Not cancel safe: dropping it abandons sessions mid-way (their keys expire).
///
/// # Examples
///
/// ```
/// # use std::time::{Duration, Instant};
/// # use redquorum_harness::{Grant, Locker};
/// # struct Local;
/// # impl Locker for Local {
/// #     type Held = ();
/// #     async fn acquire(&self, _r: &str) -> Result<Grant<()>, redquorum_harness::Refusal> {
/// #         Ok(Grant::new((), "me".into(), Instant::now() + Duration::from_secs(60)))
/// #     }
/// #     async fn release(&self, _held: ()) -> Result<(), String> { Ok(()) }
/// # }
/// # #[tokio::main] async fn main() {
/// let node = redquorum_harness::Cluster::start(1).unwrap();
/// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
/// let config = redquorum_harness::WorkloadConfig {
///     clients: 1, duration: Duration::from_millis(100), ..Default::default()
/// };
/// let history = redquorum_harness::run_workload(std::sync::Arc::new(Local), store, &config).await;
/// assert!(!history.sessions().is_empty());
/// # }
/// ```
pub async fn run_workload<L: Locker>(
    locker: Arc<L>,
    store: ProtectedStore,
    config: &WorkloadConfig,
) -> History {
    run_workload_into(History::new(), locker, store, config).await
}

/// As [`run_workload`], recording into `history`, which the caller can
/// watch while the run goes on (progress lines).
///
/// # Cancel safety
///
/// Not cancel safe: dropping it abandons sessions mid-way (their keys expire).
///
/// # Examples
///
/// See [`run_workload`]; `history.len()` grows while it runs.
pub async fn run_workload_into<L: Locker>(
    history: History,
    locker: Arc<L>,
    store: ProtectedStore,
    config: &WorkloadConfig,
) -> History {
    let until = Instant::now() + config.duration;
    let tasks: Vec<_> = (0..config.clients)
        .map(|client| {
            let run = Client::new(client, 0, &locker, &store, &history, config, until);
            tokio::spawn(run.run())
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    history
}

/// Runs the workload in `groups` client groups, each on a thread and
/// runtime of its own with its own lock client from `make(group)` (built on
/// that runtime), client `c` in group `c % groups`. `pauser` can then stop
/// a group's runtime as a whole (see [`ClientPauser`]).
///
/// # Cancel safety
///
/// Not cancel safe: dropping it leaves the groups running to their end.
///
/// # Examples
///
/// ```
/// # use std::time::{Duration, Instant};
/// # use redquorum_harness::{ClientPauser, Grant, History, Locker};
/// # struct Local;
/// # impl Locker for Local {
/// #     type Held = ();
/// #     async fn acquire(&self, _r: &str) -> Result<Grant<()>, redquorum_harness::Refusal> {
/// #         Ok(Grant::new((), "me".into(), Instant::now() + Duration::from_secs(60)))
/// #     }
/// #     async fn release(&self, _held: ()) -> Result<(), String> { Ok(()) }
/// # }
/// # #[tokio::main] async fn main() {
/// let node = redquorum_harness::Cluster::start(1).unwrap();
/// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
/// let config = redquorum_harness::WorkloadConfig {
///     clients: 2, duration: Duration::from_millis(100), ..Default::default()
/// };
/// let pauser = ClientPauser::default();
/// let history = redquorum_harness::run_workload_groups(History::new(), 2, |_| Local, store, &config, &pauser).await;
/// assert!(history.sessions().iter().any(|s| s.group == 1));
/// # }
/// ```
pub async fn run_workload_groups<L, F>(
    history: History,
    groups: usize,
    make: F,
    store: ProtectedStore,
    config: &WorkloadConfig,
    pauser: &ClientPauser,
) -> History
where
    L: Locker,
    F: Fn(usize) -> L + Send + Sync + 'static,
{
    let groups = groups.max(1);
    let until = Instant::now() + config.duration;
    let make = Arc::new(make);
    let threads: Vec<_> = (0..groups)
        .filter_map(|group| {
            let (make, store, history, config) =
                (make.clone(), store.clone(), history.clone(), config.clone());
            let pauses = pauser.register(group);
            std::thread::Builder::new()
                .name(format!("client-group-{group}"))
                .spawn(move || {
                    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    else {
                        return;
                    };
                    runtime.block_on(async move {
                        crate::faults::serve_pauses(pauses);
                        let locker = Arc::new(make(group));
                        let tasks: Vec<_> = (group..config.clients)
                            .step_by(groups)
                            .map(|client| {
                                let run = Client::new(
                                    client, group, &locker, &store, &history, &config, until,
                                );
                                tokio::spawn(run.run())
                            })
                            .collect();
                        for task in tasks {
                            let _ = task.await;
                        }
                    });
                })
                .ok()
        })
        .collect();
    let _ = tokio::task::spawn_blocking(move || {
        for thread in threads {
            let _ = thread.join();
        }
    })
    .await;
    pauser.clear();
    history
}

/// One client's loop: lock a random resource, use it as its holder kind says, repeat.
struct Client<L: Locker> {
    client: usize,
    group: usize,
    locker: Arc<L>,
    store: ProtectedStore,
    history: History,
    config: WorkloadConfig,
    until: Instant,
}

impl<L: Locker> Client<L> {
    fn new(
        client: usize,
        group: usize,
        locker: &Arc<L>,
        store: &ProtectedStore,
        history: &History,
        config: &WorkloadConfig,
        until: Instant,
    ) -> Self {
        Self {
            client,
            group,
            locker: Arc::clone(locker),
            store: store.clone(),
            history: history.clone(),
            config: config.clone(),
            until,
        }
    }

    async fn run(self) {
        let config = &self.config;
        let mut rng =
            rand::rngs::StdRng::seed_from_u64(config.seed.wrapping_add(self.client as u64));
        let total: u32 = config.holders.iter().map(|(_, w)| w).sum();
        while Instant::now() < self.until && !config.resources.is_empty() {
            let resource = &config.resources[rng.gen_range(0..config.resources.len())];
            let holder = pick(&config.holders, rng.gen_range(0..total.max(1)));
            let start = self.history.now();
            let Some(acquired) = self
                .drops()
                .run(&mut rng, self.locker.acquire(resource))
                .await
            else {
                let mut session = Session::refused(self.client, resource, start, "dropped");
                session.group = self.group;
                session.holder = holder;
                session.dropped = Some(Dropped::Acquire);
                self.history.record(session);
                continue;
            };
            match acquired {
                Err(refusal) => {
                    let mut session = Session::refused(self.client, resource, start, refusal.kind);
                    session.group = self.group;
                    session.holder = holder;
                    self.history.record(session);
                    let pause = rng.gen_range(Duration::ZERO..=config.backoff);
                    tokio::time::sleep(pause).await;
                }
                Ok(grant) => {
                    let hold = rng.gen_range(config.hold.0..=config.hold.1);
                    let (mut session, held) = self
                        .critical_section(resource, start, grant, holder, hold)
                        .await;
                    session.release = Some(self.history.now());
                    match self.drops().run(&mut rng, self.locker.release(held)).await {
                        Some(Ok(())) => session.released = Some(self.history.now()),
                        // A failed release leaves the key to its TTL; the leak check covers it.
                        Some(Err(_)) => {}
                        None => session.dropped = Some(Dropped::Release),
                    }
                    self.history.record(session);
                }
            }
        }
    }

    fn drops(&self) -> DropPlan {
        DropPlan {
            chance: self.config.drop_chance,
            within: self.config.drop_within,
        }
    }

    /// Uses the granted lock; returns the session and the hold to release.
    async fn critical_section(
        &self,
        resource: &str,
        start: Duration,
        grant: Grant<L::Held>,
        holder: Holder,
        hold: Duration,
    ) -> (Session, L::Held) {
        let (history, config) = (&self.history, &self.config);
        let Grant {
            mut held,
            owner,
            fence,
            mut deadline,
            kind,
            share,
            renews_itself,
            ..
        } = grant;
        let mut session = Session::granted(
            self.client,
            resource,
            &owner,
            start,
            history.now(),
            history.at(deadline),
        );
        session.group = self.group;
        session.holder = holder;
        session.fence = fence;
        session.kind = kind.to_owned();
        session.renews_itself = renews_itself;
        let sharing = share.is_some();
        session.share = share;
        session.write_start = None;
        session.write_end = None;
        session.outcome = Outcome::Abandoned;
        let store_fence = fence.filter(|_| config.fenced_store);
        if config.fenced_store && fence.is_none() {
            // No token (fencing's write-back failed): a fenced resource cannot
            // be touched, so the holder gives up before reading.
            return (session, held);
        }
        match self.store.read(resource, store_fence).await {
            Ok(Some(value)) => {
                session.read = Some(value);
                session.read_at = Some(history.now());
                let write = self
                    .use_lease(holder, hold, &mut held, &mut deadline, &mut session)
                    .await;
                if sharing {
                    // Sharers read only: their read-modify-writes would race.
                    session.outcome = Outcome::ReadOnly;
                } else if write {
                    session.write_start = Some(history.now());
                    session.wrote = Some(value + 1);
                    session.outcome = match self.store.write(resource, value + 1, store_fence).await
                    {
                        Ok(true) => Outcome::Completed,
                        Ok(false) => Outcome::Rejected,
                        Err(e) => Outcome::Indeterminate(e.to_string()),
                    };
                    session.write_end = Some(history.now());
                }
                if holder == Holder::ToDeadline {
                    // Use the lease until just before its deadline: a lease
                    // that is too long then overlaps the next holder.
                    let tail = Duration::from_millis(2);
                    tokio::time::sleep_until(
                        (deadline.checked_sub(tail).unwrap_or(deadline)).into(),
                    )
                    .await;
                }
            }
            Ok(None) => session.outcome = Outcome::Rejected,
            Err(_) => {}
        }
        (session, held)
    }

    /// Holds the lock as `holder` does; returns whether to write now.
    async fn use_lease(
        &self,
        holder: Holder,
        hold: Duration,
        held: &mut L::Held,
        deadline: &mut Instant,
        session: &mut Session,
    ) -> bool {
        let config = &self.config;
        match holder {
            Holder::Brief => tokio::time::sleep(hold).await,
            Holder::Renewing => {
                // 2 to 4 extensions, each with a third of the lease left.
                for _ in 0..2 + hold.subsec_nanos() % 3 {
                    let lease = deadline.saturating_duration_since(Instant::now());
                    tokio::time::sleep(lease * 2 / 3).await;
                    if !self.extend(held, deadline, session).await {
                        return false;
                    }
                }
            }
            Holder::ToDeadline => {
                // Write with twice the margin left (an honest holder's check
                // then passes on a loaded machine), then hold on to the end.
                let write_at = deadline
                    .checked_sub(config.write_margin * 2)
                    .unwrap_or(*deadline);
                tokio::time::sleep_until(write_at.into()).await;
            }
            Holder::Paused | Holder::Extending => {
                // The GC-pause model: stop until after the lease ended.
                let before = Instant::now();
                tokio::time::sleep_until((*deadline + config.pause_past_validity).into()).await;
                session.paused = Some(before.elapsed());
                if holder == Holder::Paused {
                    // Unaware of the pause, it writes from its old read.
                    return true;
                }
                if !self.extend(held, deadline, session).await {
                    return false;
                }
            }
        }
        !config.check_before_write || Instant::now() + config.write_margin <= *deadline
    }

    /// Extends the lease and records the extension in the session; false
    /// when it failed (the holder then gives up before its write).
    async fn extend(
        &self,
        held: &mut L::Held,
        deadline: &mut Instant,
        session: &mut Session,
    ) -> bool {
        let at = self.history.now();
        match self.locker.extend(held).await {
            Ok(until) => {
                *deadline = until;
                session.extensions.push(Extension {
                    at,
                    until: self.history.at(until),
                });
                true
            }
            Err(_) => false,
        }
    }
}

/// The holder kind whose weight range holds `ticket`.
fn pick(holders: &[(Holder, u32)], mut ticket: u32) -> Holder {
    for (holder, weight) in holders {
        if ticket < *weight {
            return *holder;
        }
        ticket -= weight;
    }
    Holder::Brief
}
