//! Which nodes' votes count: the cached probe results of a node, and the
//! rules that refuse a vote.
//!
//! Redlock's safety needs every node to remember the keys it granted for
//! their whole TTL. A node without `appendfsync always` that crashed and came
//! back empty breaks that, unless it stays out of every quorum until the
//! largest TTL has passed since it started ("delayed restart"). With
//! [`RedlockBuilder::max_ttl`](crate::RedlockBuilder::max_ttl) set, redquorum
//! enforces this itself: such a node's votes are refused
//! ([`NodeOutcome::Refused`](crate::NodeOutcome::Refused)) until its uptime
//! reaches the max TTL. Replicas never vote, and one server reached under
//! two names votes once (node/nodes.rs compares the run ids).
//!
//! A reconnection seen at vote time (possibly a restart) makes the node's
//! votes refused until the next probe has run, so a restart cannot slip in
//! between two probes. (fred announces a new connection before it sends
//! anything on it, so a reply that came over a new connection is always
//! preceded by the announcement the vote path checks.)

use std::sync::Mutex;
use std::time::{Duration, Instant};

use fred::types::config::Server;
use tokio::sync::broadcast::{self, error::TryRecvError};

use crate::health::clock_watch::{ClockSample, ClockWatch};
use crate::health::ineligible::Ineligible;
use crate::health::node_health::{Durability, NodeHealth, Probe, Role};
use crate::sync::lock;

/// The decision rule, pure: why a node with this state may not vote at `now`.
fn refusal(
    probe: &Probe,
    started_at: Option<Instant>,
    verified: bool,
    max_ttl: Option<Duration>,
    now: Instant,
) -> Option<Ineligible> {
    if probe.role == Role::Replica {
        return Some(Ineligible::Replica);
    }
    if probe.too_old() {
        let version = probe.version.clone().unwrap_or_default();
        return Some(Ineligible::ServerTooOld { version });
    }
    let max_ttl = max_ttl?;
    if !verified {
        return Some(Ineligible::Unverified);
    }
    if probe.durability == Durability::Fsync {
        return None;
    }
    // Unknown durability counts as not durable, and unknown uptime (INFO
    // denied) as a node that may have just restarted: the rule must not be
    // skipped because it cannot be checked.
    let Some(started_at) = started_at else {
        return Some(Ineligible::UnknownUptime);
    };
    let uptime = now.saturating_duration_since(started_at);
    (uptime < max_ttl).then_some(Ineligible::RecentRestart { uptime, max_ttl })
}

/// When a node whose `INFO` said `uptime` at `probed` started, on the safe
/// (later) side. Redis computes `uptime_in_seconds` as the difference of two
/// clock readings truncated to whole seconds (now, start), so it can exceed
/// the real uptime by almost a second: a node up 0.2 s may say 1. Taking one
/// second off never makes a node look older than it is.
fn assumed_start(probed: Instant, uptime: Duration) -> Instant {
    let at_least = uptime.saturating_sub(Duration::from_secs(1));
    probed.checked_sub(at_least).unwrap_or(probed)
}

/// The default time between periodic probes.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// The cached health of one node, shared by its prober task and its votes.
#[derive(Debug)]
pub(crate) struct Eligibility {
    max_ttl: Option<Duration>,
    interval: Duration,
    /// The clock rule (health/clock_watch.rs): the drift allowance, and how long a
    /// node's clock must be stable after a fault before it votes again;
    /// `None` when clocks are not checked.
    clock_rule: Option<(f64, Duration)>,
    state: Mutex<State>,
    /// The oldest server version that may vote (a cluster shard needs a
    /// newer one than a single server).
    oldest: (u32, u32),
    /// Reconnection events as seen by the vote path (the checker task has its own receiver).
    reconnects: Mutex<broadcast::Receiver<Server>>,
    /// For a cluster shard primary: how long a change of its replication id
    /// refuses its votes (the longest lease); `None` on a single server.
    promotion_refusal: Option<Duration>,
}

#[derive(Debug, Default)]
struct State {
    probe: Probe,
    /// `probe time - uptime`, rounded so that the node seems younger, never older.
    started_at: Option<Instant>,
    /// Reconnections seen so far, by either receiver (both see the same sequence).
    reconnects_seen: u64,
    reconnects_seen_by_votes: u64,
    reconnects_seen_by_checker: u64,
    /// `reconnects_seen` when the last successful probe started; `None` before the first.
    probed_through: Option<u64>,
    clock: ClockWatch,
    /// When this server was seen taking over a cluster shard's slots after
    /// the first topology (a failover, or a new shard), and for how long
    /// its votes are refused: it may lack writes its predecessor
    /// acknowledged (node/cluster.rs).
    became_primary: Option<(Instant, Duration)>,
    /// A cluster shard primary's replication id as last read.
    replication_id: Option<String>,
    /// Whether an unreadable replication id was said (logged once).
    id_unreadable_said: bool,
}

/// What a cluster shard primary's replication id, just read, says
/// ([`Eligibility::saw_replication_id`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IdSeen {
    /// The first one read, or the one read last time.
    Same,
    /// Another than last time: promoted since.
    Changed { from: String, to: String },
    /// Not readable; `first`: the first time since it last was.
    Unreadable { first: bool },
}

impl Eligibility {
    pub(crate) fn new(reconnects: broadcast::Receiver<Server>) -> Self {
        Self {
            max_ttl: None,
            interval: DEFAULT_INTERVAL,
            clock_rule: None,
            oldest: crate::health::oldest_server::OLDEST_SERVER,
            state: Mutex::new(State::default()),
            reconnects: Mutex::new(reconnects),
            promotion_refusal: None,
        }
    }

    /// Makes this a cluster shard primary's: a change of its replication id
    /// refuses its votes for `stable_for` (the longest lease).
    pub(crate) fn configure_promotions(&mut self, stable_for: Duration) {
        self.promotion_refusal = Some(stable_for);
    }

    /// Enables the delayed-restart rule for leases up to `max_ttl` (`None`: off),
    /// and sets the time between periodic probes.
    pub(crate) fn configure(&mut self, max_ttl: Option<Duration>, interval: Duration) {
        self.max_ttl = max_ttl;
        self.interval = interval;
    }

    /// Refuses the votes of servers older than `oldest` (a cluster shard:
    /// [`OLDEST_CLUSTER_SERVER`](crate::OLDEST_CLUSTER_SERVER)).
    pub(crate) fn configure_oldest(&mut self, oldest: (u32, u32)) {
        self.oldest = oldest;
    }

    /// Sets the clock rule: a node whose clock is off by more than
    /// `drift_factor` is refused until stable for `stable_for`.
    pub(crate) fn configure_clock(&mut self, drift_factor: f64, stable_for: Duration) {
        self.clock_rule = Some((drift_factor, stable_for));
    }

    /// The time between periodic probes.
    pub(crate) fn interval(&self) -> Duration {
        self.interval
    }

    /// Counts a reconnection seen by the checker task.
    pub(crate) fn checker_saw_reconnect(&self, events: u64) {
        let mut state = lock(&self.state);
        state.reconnects_seen_by_checker += events;
        state.reconnects_seen = state
            .reconnects_seen_by_checker
            .max(state.reconnects_seen_by_votes);
    }

    /// The reconnection count a probe starting now covers.
    pub(crate) fn probe_epoch(&self) -> u64 {
        self.drain_reconnects();
        lock(&self.state).reconnects_seen
    }

    /// Stores a completed probe that started at `epoch` (and at `started` in
    /// time); returns the previous probe, to log changes only.
    pub(crate) fn record(
        &self,
        probe: Probe,
        epoch: u64,
        started: Instant,
    ) -> (Probe, Option<Ineligible>) {
        let mut state = lock(&self.state);
        let mut clock_fault = None;
        if let (Some(node_us), Some((drift_factor, _))) = (probe.server_time_us, self.clock_rule) {
            let sample = ClockSample {
                sent: started,
                answered: Instant::now(),
                node_us,
            };
            clock_fault = state.clock.record(sample, drift_factor);
        }
        state.started_at = probe.uptime.map(|uptime| assumed_start(started, uptime));
        state.probed_through = Some(state.probed_through.map_or(epoch, |p| p.max(epoch)));
        (std::mem::replace(&mut state.probe, probe), clock_fault)
    }

    /// Marks the server as a primary that took over slots just now: its
    /// votes are refused for `stable_for` (the longest lease), whatever its
    /// durability, as a restarted node's are.
    pub(crate) fn became_primary(&self, stable_for: Duration) {
        lock(&self.state).became_primary = Some((Instant::now(), stable_for));
    }

    /// A cluster shard primary's replication id, just read (`None`: it
    /// could not be). A promotion gives the server a new one, so an id
    /// other than the last one read means it may lack holds a predecessor
    /// granted, even when every slot map shows it as the same primary
    /// (failed over away and back between two reads): its votes are
    /// refused for the longest lease, as a new primary's. So are they when
    /// the id cannot be read, which cannot rule that out.
    pub(crate) fn saw_replication_id(&self, id: Option<&str>) -> IdSeen {
        let Some(stable_for) = self.promotion_refusal else {
            return IdSeen::Same;
        };
        let mut state = lock(&self.state);
        let seen = match (state.replication_id.as_deref(), id) {
            (_, None) => IdSeen::Unreadable {
                first: !std::mem::replace(&mut state.id_unreadable_said, true),
            },
            (Some(from), Some(to)) if from != to => IdSeen::Changed {
                from: from.to_owned(),
                to: to.to_owned(),
            },
            _ => IdSeen::Same,
        };
        if let Some(id) = id {
            if state.replication_id.as_deref() != Some(id) {
                state.replication_id = Some(id.to_owned());
            }
            state.id_unreadable_said = false;
        }
        if seen != IdSeen::Same {
            state.became_primary = Some((Instant::now(), stable_for));
        }
        seen
    }

    /// Why this node's vote is refused now, if it is. Cheap: no I/O.
    pub(crate) fn refusal(&self) -> Option<Ineligible> {
        self.drain_reconnects();
        let state = lock(&self.state);
        let now = Instant::now();
        if let Some((since, stable_for)) = state.became_primary {
            let age = now.saturating_duration_since(since);
            if age < stable_for {
                return Some(Ineligible::NewPrimary {
                    age,
                    max_ttl: stable_for,
                });
            }
        }
        let clock_fault = self
            .clock_rule
            .and_then(|(_, stable_for)| state.clock.refusal(stable_for, now));
        if clock_fault.is_some() {
            return clock_fault;
        }
        if state.probe.older_than(self.oldest) {
            let version = state.probe.version.clone().unwrap_or_default();
            return Some(Ineligible::ServerTooOld { version });
        }
        let verified = state
            .probed_through
            .is_some_and(|p| p >= state.reconnects_seen);
        refusal(&state.probe, state.started_at, verified, self.max_ttl, now)
    }

    /// The server's run id, once a probe has read it.
    pub(crate) fn run_id(&self) -> Option<String> {
        lock(&self.state).probe.run_id.clone()
    }

    /// A snapshot for `Redlock::health`.
    pub(crate) fn snapshot(&self) -> NodeHealth {
        let refusal = self.refusal();
        let state = lock(&self.state);
        NodeHealth {
            role: state.probe.role,
            durability: state.probe.durability,
            eviction_policy: state.probe.eviction_policy.clone(),
            uptime: state.started_at.map(|s| s.elapsed()),
            refusal,
            down: None,
        }
    }

    /// Counts reconnections that happened since the vote path last looked.
    fn drain_reconnects(&self) {
        let mut events = 0;
        {
            let mut receiver = lock(&self.reconnects);
            loop {
                match receiver.try_recv() {
                    Ok(_) => events += 1,
                    Err(TryRecvError::Lagged(n)) => events += n,
                    Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                }
            }
        }
        if events > 0 {
            let mut state = lock(&self.state);
            state.reconnects_seen_by_votes += events;
            state.reconnects_seen = state
                .reconnects_seen_by_checker
                .max(state.reconnects_seen_by_votes);
        }
    }
}

#[cfg(test)]
#[path = "eligibility_tests.rs"]
mod tests;
