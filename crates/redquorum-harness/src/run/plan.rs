//! `TorturePlan`: everything a torture run needs, resolved (from a command
//! line, a mutant's recipe or a test), and the settings of each part of the
//! run derived from it: the nodes and their clocks, the workload, the
//! nemesis, the key audit's slack, the lock-delay rule, the saved run's
//! header. The run itself is in `torture.rs`.

use std::time::{Duration, Instant};

use crate::check::LockDelayRule;
use crate::evidence::{Holder, LockKeys};
use crate::faults::{ClientPauser, FaultKind, NemesisConfig};
use crate::nodes::{Cluster, Persistence, faketime_support};

use super::history_file::RunInfo;
use super::operator_pace::OperatorPace;
use super::workload_config::WorkloadConfig;

/// The chance that a brief holder's caller gives up on its acquire after a
/// timeout of its own (one node timeout to the lock's wait), in a run that
/// drops futures part-way: about a quarter of all acquires in the default
/// mix (long jobs and renewing holders always wait). At 4 % and 8 % of all
/// acquires, a dropped acquire's keys left to their TTL escaped one seed in
/// three (`unwind-disarmed-early`): the audit cannot tell which attempt set
/// a key, and another waiter excused it.
const GIVE_UP_CHANCE: f64 = 0.38;

/// The lock's default drift factor: a faster clock is outside it.
const DRIFT_ALLOWED: f64 = 0.01;

/// Everything a torture run needs: nodes (local, with the clocks asked
/// for, or given), per-group fault proxies, the key audit, the nemesis,
/// the workload in client groups, then the leak wait and the checker.
/// The lock under test is `lock`, which the caller builds for each client
/// group ([`TortureLock`](crate::TortureLock)); run it with
/// [`execute`](Self::execute).
///
/// # Examples
///
/// ```
/// use redquorum_harness::{FaultKind, TorturePlan};
/// let plan = TorturePlan { kinds: vec![FaultKind::Stall], ..TorturePlan::new(()) };
/// assert_eq!(plan.slack(), plan.ttl / 2);
/// assert!(!plan.delayed_restart(), "no kills");
/// ```
#[derive(Debug, Clone)]
pub struct TorturePlan<L> {
    /// Nodes given by URL: run against them (no process faults). Empty:
    /// start `node_count` local nodes.
    pub given: Vec<String>,
    /// How many local nodes to start (with `cluster_shards`: masters).
    pub node_count: usize,
    /// Each of the `node_count` masters is a local Redis Cluster of this
    /// many shards, each shard's primary with one replica, reached through
    /// `redis-cluster://` URLs (no fault proxies: its nemesis is
    /// [`FaultKind::CLUSTER`]'s). `None`: single servers.
    pub cluster_shards: Option<usize>,
    /// What the local nodes write to disk.
    pub persistence: Persistence,
    /// Every local node's clock runs this many times as fast (libfaketime).
    pub fast_clocks: Option<f64>,
    /// Node 0's wall clock runs this far ahead of the others (libfaketime).
    pub clock_ahead: Option<Duration>,
    /// Node 0's clock alone runs this many times as fast (libfaketime):
    /// outside the drift allowance, so the lock's clock monitoring must
    /// take its vote away.
    pub fast_node: Option<f64>,
    /// The last N/2 + 1 local nodes' clocks run this many times as fast
    /// (libfaketime), using most of the drift budget; clock faults spare
    /// them. Skipped, said so, without libfaketime.
    pub drift_rate: Option<f64>,
    /// `host:port` of a Redis for the protected counters (`None`: a local
    /// one started for the run).
    pub store: Option<String>,
    /// The lock's TTL.
    pub ttl: Duration,
    /// The lock's node timeout: a node applies an operation within it, and
    /// a slow majority answers within it.
    pub node_timeout: Duration,
    /// How long clients keep locking.
    pub duration: Duration,
    /// Concurrent clients.
    pub clients: usize,
    /// Resources the clients contend for (`r0`, `r1`, ...).
    pub resources: usize,
    /// Client groups, each with its own fault proxies and runtime.
    pub groups: usize,
    /// The faults the nemesis chooses from (empty: no nemesis).
    pub kinds: Vec<FaultKind>,
    /// Nodes per fault: at least, at most.
    pub fault_nodes: (usize, usize),
    /// Quiet time between faults: at least, at most.
    pub fault_gap: (Duration, Duration),
    /// The longest fault.
    pub fault_length: Duration,
    /// The longest client pause.
    pub client_pause: Duration,
    /// The holder mix, kind and weight.
    pub holders: Vec<(Holder, u32)>,
    /// The protected store checks fencing tokens.
    pub fenced_store: bool,
    /// Holders check their deadline before writing.
    pub check_before_write: bool,
    /// How far past its deadline a paused holder sleeps.
    pub pause_past: Duration,
    /// The seed of the clients and the nemesis.
    pub seed: u64,
    /// The lock under test (see [`TortureLock`](crate::TortureLock)).
    pub lock: L,
    /// The chance that a client drops an acquire or release part-way.
    pub drop_chance: f64,
    /// [`WorkloadConfig::own_name_chance`]: sessions on their client's own name.
    pub own_name_chance: f64,
    /// [`WorkloadConfig::hand_over_chance`]: holds handed over to adopters.
    pub hand_over_chance: f64,
    /// The lock's lock-delay (zero: none); the checker then holds it to it.
    pub lock_delay: Duration,
    /// How often an operator inspects and force-releases the resources.
    pub operator: OperatorPace,
    /// No banner and no progress lines on stderr (they are also left out
    /// when stderr is not a terminal).
    pub quiet: bool,
    /// The planted bug, for a mutant run (saved with the run).
    pub mutant: Option<String>,
    /// The command line, for running it again (saved with the run).
    pub command: String,
}

impl<L> TorturePlan<L> {
    /// A plan for `lock`: 5 local nodes (AOF every second), a 2 s TTL and
    /// a 100 ms node timeout, 8 clients in 2 groups on 2 resources for
    /// 10 s, brief holders on a fenced store, every fault within the
    /// assumptions on 1 or 2 nodes at a time, no operator, quiet.
    #[must_use]
    pub fn new(lock: L) -> Self {
        let ttl = Duration::from_secs(2);
        Self {
            given: Vec::new(),
            node_count: 5,
            cluster_shards: None,
            persistence: Persistence::AofEverySec,
            fast_clocks: None,
            clock_ahead: None,
            fast_node: None,
            drift_rate: None,
            store: None,
            ttl,
            node_timeout: Duration::from_millis(100),
            duration: Duration::from_secs(10),
            clients: 8,
            resources: 2,
            groups: 2,
            kinds: FaultKind::SAFE.to_vec(),
            fault_nodes: (1, 2),
            fault_gap: (Duration::ZERO, Duration::from_millis(300)),
            fault_length: ttl / 2,
            client_pause: ttl * 2,
            holders: vec![(Holder::Brief, 1)],
            fenced_store: true,
            check_before_write: true,
            pause_past: ttl / 2,
            seed: 1,
            lock,
            drop_chance: 0.0,
            own_name_chance: 0.0,
            hand_over_chance: 0.0,
            lock_delay: Duration::ZERO,
            operator: OperatorPace::default(),
            quiet: true,
            mutant: None,
            command: String::new(),
        }
    }

    /// How long an ended owner's key may linger before the audit calls it an orphan.
    #[must_use]
    pub fn slack(&self) -> Duration {
        self.ttl / 2
    }

    /// The resources' names: `r0`, `r1`, ...
    #[must_use]
    pub fn resource_names(&self) -> Vec<String> {
        (0..self.resources).map(|i| format!("r{i}")).collect()
    }

    /// Whether the lock must enforce the delayed-restart rule: when the
    /// nemesis kills local (AOF everysec) nodes. Redis then acknowledges a
    /// write it has not written while a background fsync is slow, so a
    /// kill -9 on a busy disk can lose a granted hold, and assumption (c)
    /// needs the rule. Also when it fails cluster masters' shards over: a
    /// promoted replica may lack holds (all of those made while a lagging
    /// one was cut off), and the lock refuses a new primary's votes for its
    /// `max_ttl` (the TTL plus the lock-delay: a lost hold blocks that long).
    #[must_use]
    pub fn delayed_restart(&self) -> bool {
        let fails_over = self.cluster_shards.is_some()
            && (self.kinds.contains(&FaultKind::Failover)
                || self.kinds.contains(&FaultKind::LaggingFailover));
        self.given.is_empty()
            && (self.kinds.contains(&FaultKind::Kill)
                || self.kinds.contains(&FaultKind::RestartMajority)
                || fails_over)
    }

    /// What the checker holds a lock-delay run to: a node applies an
    /// operation within the node timeout of its sending, or, when the
    /// nemesis holds traffic back, the longest fault later.
    #[must_use]
    pub fn lock_delay_rule(&self) -> Option<LockDelayRule> {
        let held_back = if self.kinds.is_empty() {
            Duration::ZERO
        } else {
            self.fault_length
        };
        (!self.lock_delay.is_zero()).then(|| LockDelayRule {
            ttl: self.ttl,
            delay: self.lock_delay,
            max_apply: self.node_timeout + held_back,
        })
    }

    /// The nodes, started with the clocks asked for (or the given ones);
    /// `notes` gets what was skipped for want of libfaketime.
    pub(super) fn cluster(&self, notes: &mut Vec<String>) -> Result<Cluster, String> {
        if !self.given.is_empty() {
            return Cluster::external(self.given.clone()).map_err(|e| e.to_string());
        }
        // A log synced before every reply waits for no shared disk in RAM;
        // a kill -9 still loses nothing written.
        let mut builder = Cluster::builder(self.node_count)
            .persistence(self.persistence)
            .in_memory(self.persistence == Persistence::AofAlways);
        if let Some(rate) = self.fast_clocks {
            for i in 0..self.node_count {
                builder = builder.fast_clock(i, rate);
            }
        }
        if let Some(rate) = self.fast_node {
            builder = builder.fast_clock(0, rate);
        }
        if let Some(rate) = self.drift_rate {
            match faketime_support() {
                Ok(_) => {
                    for i in self.drifting_nodes() {
                        builder = builder.fast_clock(i, rate);
                    }
                }
                Err(why) => notes.push(format!("fast clocks skipped: {why}")),
            }
        }
        // A controlled clock (strobe, or a node ahead) needs libfaketime.
        let strobe = self.kinds.contains(&FaultKind::Strobe);
        if strobe || self.clock_ahead.is_some() {
            match faketime_support() {
                Ok(_) => {
                    builder = builder.controlled_clock(0, self.clock_ahead.unwrap_or_default());
                }
                Err(why) if self.clock_ahead.is_some() => return Err(why.to_string()),
                Err(why) => notes.push(format!("strobe skipped: {why}")),
            }
        }
        builder.start().map_err(|e| e.to_string())
    }

    /// The local nodes whose clocks run outside the drift allowance (1 %).
    pub(super) fn clock_off(&self) -> Vec<usize> {
        let off = |rate: Option<f64>| rate.is_some_and(|r| r > 1.0 + DRIFT_ALLOWED);
        let all = self.node_count * usize::from(off(self.fast_clocks));
        (0..all.max(usize::from(off(self.fast_node)))).collect()
    }

    /// The nodes whose clocks run fast with `drift_rate`: the last majority.
    fn drifting_nodes(&self) -> std::ops::Range<usize> {
        if self.drift_rate.is_none() || !self.given.is_empty() {
            return 0..0;
        }
        self.node_count - (self.node_count / 2 + 1)..self.node_count
    }

    /// The workload's configuration.
    pub(super) fn workload(&self) -> WorkloadConfig {
        WorkloadConfig {
            clients: self.clients,
            resources: self.resource_names(),
            duration: self.duration,
            hold: (Duration::ZERO, Duration::from_millis(50)),
            // Write only with a quarter of the TTL left: margin for a loaded machine.
            write_margin: self.ttl / 4,
            holders: self.holders.clone(),
            pause_past_validity: self.pause_past,
            check_before_write: self.check_before_write,
            fenced_store: self.fenced_store,
            drop_chance: self.drop_chance,
            // Short: most drops land inside the call's first attempt, not in a wait.
            drop_within: Duration::from_millis(15),
            // Some brief holders' callers give up after their own timeout.
            give_up_chance: if self.drop_chance > 0.0 {
                GIVE_UP_CHANCE
            } else {
                0.0
            },
            give_up_after: (self.node_timeout, self.ttl / 2),
            own_name_chance: self.own_name_chance,
            hand_over_chance: self.hand_over_chance,
            seed: self.seed,
            ..WorkloadConfig::default()
        }
    }

    /// The nemesis's configuration, for lock keys `keys` (under `prefix`)
    /// and client groups paused through `pauser`, on the history's clock
    /// from `epoch`.
    pub(super) fn nemesis(
        &self,
        keys: &LockKeys,
        prefix: &str,
        pauser: &ClientPauser,
        epoch: Instant,
    ) -> NemesisConfig {
        NemesisConfig {
            kinds: self.kinds.clone(),
            min_nodes: self.fault_nodes.0,
            max_nodes: self.fault_nodes.1,
            max_fault: self.fault_length,
            min_gap: self.fault_gap.0,
            max_gap: self.fault_gap.1,
            // Within the drift budget (ttl × 0.01 + 2 ms): a legal clock error.
            max_clock_jump: self.ttl / 100,
            clock_window: self.ttl,
            max_strobe: self.ttl / 100,
            max_client_pause: self.client_pause,
            // Fast clocks use their drift budget: clock faults spare them.
            clock_nodes: (0..self.node_count)
                .filter(|n| !self.drifting_nodes().contains(n))
                .collect(),
            // A slow majority answers within the node timeout: slow, not down.
            majority_latency: self.node_timeout * 4 / 5,
            clients: Some(pauser.clone()),
            key_pattern: keys.pattern.clone(),
            // The library's layout, `<prefix>{<name>}` (the names `r0`,
            // `r1`, ... need no escaping): cluster faults aim at their slots.
            lock_keys: self
                .resource_names()
                .iter()
                .map(|name| format!("{prefix}{{{name}}}"))
                .collect(),
            epoch: Some(epoch),
            seed: self.seed,
            ..NemesisConfig::default()
        }
    }

    /// The saved run's header, for `nodes` nodes and a lock named `lock_kind`.
    pub(super) fn info(&self, nodes: usize, lock_kind: String) -> RunInfo {
        let ms = |every: Option<Duration>| every.map(|d| d.as_millis() as u64);
        RunInfo {
            command: self.command.clone(),
            ttl_ms: self.ttl.as_millis() as u64,
            slack_ms: self.slack().as_millis() as u64,
            nodes,
            shards: self.cluster_shards,
            clients: self.clients,
            groups: self.groups,
            duration_ms: self.duration.as_millis() as u64,
            nemesis: self.kinds.iter().map(|k| k.name().to_owned()).collect(),
            fenced_store: self.fenced_store,
            mutant: self.mutant.clone(),
            lock_delay: self.lock_delay_rule(),
            inspect_every_ms: ms(self.operator.inspect_every),
            force_release_every_ms: ms(self.operator.force_release_every),
            operator_by_default: self.operator.by_default,
            hand_overs: self.hand_over_chance > 0.0,
            lock_kind,
            seed: self.seed,
            clock_off: self.clock_off(),
            // The lock fills in the configurations and their TTLs (`TortureLock`).
            ..RunInfo::default()
        }
    }
}
