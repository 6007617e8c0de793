//! One client of the workload: lock a random resource (or, now and then,
//! a name of its own: `WorkloadConfig::own_name_chance`), use it as its
//! holder kind says (a read-modify-write of the protected counter, pauses,
//! extensions), release it, record the session, repeat until the end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use super::attempts::{recording, taken};
use super::cancel::DropPlan;
use crate::evidence::{Dropped, Extension, History, Holder, Outcome, Session};
use crate::run::grant::Grant;
use crate::run::locker::{HandOver, Locker};
use crate::run::store::ProtectedStore;
use crate::run::workload_config::WorkloadConfig;

/// One client's loop: lock a random resource, use it as its holder kind says, repeat.
pub(crate) struct Client<L: Locker> {
    client: usize,
    group: usize,
    locker: Arc<L>,
    store: ProtectedStore,
    history: History,
    config: WorkloadConfig,
    until: Instant,
}

impl<L: Locker> Client<L> {
    pub(crate) fn new(
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

    /// Runs sessions until the workload's end.
    pub(crate) async fn run(self) {
        let config = &self.config;
        let mut rng =
            rand::rngs::StdRng::seed_from_u64(config.seed.wrapping_add(self.client as u64));
        let total: u32 = config.holders.iter().map(|(_, w)| w).sum();
        while Instant::now() < self.until && !config.resources.is_empty() {
            // Drawn only when asked for: a run without names of their own
            // keeps the random sequence (and so the sessions) of its seed.
            let own = config.own_name_chance > 0.0
                && rng.gen_bool(config.own_name_chance.clamp(0.0, 1.0));
            let resource = &if own {
                WorkloadConfig::own_name(self.client)
            } else {
                config.resources[rng.gen_range(0..config.resources.len())].clone()
            };
            let holder = pick(&config.holders, rng.gen_range(0..total.max(1)));
            let outside = self
                .locker
                .outside(resource, &self.history, &self.store)
                .await;
            if !outside.is_empty() {
                for mut session in outside {
                    session.client = self.client;
                    session.group = self.group;
                    self.history.record(session);
                }
                continue;
            }
            let start = self.history.now();
            let tried = Arc::default();
            let acquire = recording(&tried, self.locker.acquire(resource));
            let acquired = self
                .drops()
                .acquire(&mut rng, holder == Holder::Brief, acquire)
                .await;
            let tried = taken(&tried);
            let Some(acquired) = acquired else {
                let mut session = Session::refused(self.client, resource, start, "dropped");
                session.tried = tried;
                session.group = self.group;
                session.holder = holder;
                session.dropped = Some(Dropped::Acquire);
                session.ended = Some(self.history.now());
                self.history.record(session);
                continue;
            };
            match acquired {
                Err(refusal) => {
                    let mut session = Session::refused(self.client, resource, start, refusal.kind);
                    session.ended = Some(self.history.now());
                    session.tried = tried;
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
                    session.tried = tried;
                    session.release = Some(self.history.now());
                    // Drawn only when asked for, as the own name above.
                    let hand_over = config.hand_over_chance > 0.0
                        && rng.gen_bool(config.hand_over_chance.clamp(0.0, 1.0));
                    let held = if hand_over {
                        match self.locker.hand_over(held) {
                            // Its use ended at the hand-over (its `release`).
                            HandOver::Ticket(ticket) => {
                                let from = session.owner.clone();
                                self.history.record(session);
                                self.adopters(resource, &ticket, &from, hold).await;
                                continue;
                            }
                            HandOver::Kept(held) => held,
                        }
                    } else {
                        held
                    };
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

    pub(super) fn history(&self) -> &History {
        &self.history
    }

    pub(super) fn locker(&self) -> &L {
        &self.locker
    }

    pub(super) fn client(&self) -> usize {
        self.client
    }

    pub(super) fn group(&self) -> usize {
        self.group
    }

    fn drops(&self) -> DropPlan {
        DropPlan {
            chance: self.config.drop_chance,
            within: self.config.drop_within,
            give_up: self.config.give_up_chance,
            give_up_after: self.config.give_up_after,
        }
    }

    /// Uses the granted lock; returns the session and the hold to release.
    pub(super) async fn critical_section(
        &self,
        resource: &str,
        start: Duration,
        grant: Grant<L::Held>,
        holder: Holder,
        hold: Duration,
    ) -> (Session, L::Held) {
        let (history, config) = (&self.history, &self.config);
        // The audit reads the nodes now, while even a brief hold lasts.
        history.audit_nudge().nudge();
        let Grant {
            mut held,
            owner,
            fence,
            mut deadline,
            kind,
            share,
            renews_itself,
            tokenless,
            kept,
            also,
            voters,
            ..
        } = grant;
        // A hold the lock keeps alive itself is a long job, whatever was drawn.
        let holder = if kept.is_some() { Holder::Kept } else { holder };
        let hold = kept.unwrap_or(hold);
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
        session.tokenless = tokenless;
        session.also = also;
        session.voters = voters;
        // A holder that never asked for a token only reads a fenced store:
        // its unfenced write would not raise the store's token floor, so a
        // stale fenced holder's write would be accepted after it (a lost
        // update that mixing, not the lock, caused).
        let read_only = share.is_some() || (tokenless && config.fenced_store);
        session.share = share;
        session.write_start = None;
        session.write_end = None;
        session.outcome = Outcome::Abandoned;
        let store_fence = fence.filter(|_| config.fenced_store);
        if config.fenced_store && fence.is_none() && !tokenless {
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
                if read_only {
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
            Holder::Kept => {
                let history = &self.history;
                let locker = &*self.locker;
                if !super::kept::work_kept(locker, held, hold, deadline, session, history).await {
                    return false;
                }
            }
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
                session.renewed.push(self.history.now());
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
