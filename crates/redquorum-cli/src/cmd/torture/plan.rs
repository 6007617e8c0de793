//! One torture run from a resolved plan: nodes (with the clocks asked for),
//! per-group fault proxies, the key audit, the nemesis, the workload in
//! client groups, then the leak wait and the checker. `torture` and
//! `mutants` both run through here.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redquorum::{LockOptions, Redlock};
use redquorum_harness::{
    AuditConfig, ClientPauser, Cluster, Exercised, FaultKind, FaultLog, History, HistoryFile,
    Holder, KeyAudit, LockDelayRule, LockKeys, Nemesis, NemesisConfig, OperatorLog, Persistence,
    ProtectedStore, Proxies, RunInfo, Verdict, WorkloadConfig, faketime_support,
    inspections_naming_holders, lock_keys_after, ousted_holders, run_workload_groups,
    vanished_holders,
};

use redquorum_benches::{LockKind, MixedLocker};

use super::operator::{self, Pace};

/// Everything a run needs, resolved from the command line or a mutant's recipe.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// `--nodes` given: run against them (no process faults).
    pub(crate) given: Vec<String>,
    pub(crate) node_count: usize,
    pub(crate) persistence: Persistence,
    /// Every local node's clock runs this many times as fast (libfaketime).
    pub(crate) fast_clocks: Option<f64>,
    /// Node 0's wall clock runs this far ahead of the others (libfaketime).
    pub(crate) clock_ahead: Option<Duration>,
    /// Node 0's clock alone runs this many times as fast (libfaketime):
    /// outside the drift allowance, so the lock's clock monitoring must
    /// take its vote away (each client's handle probes every ttl / 10).
    pub(crate) fast_node: Option<f64>,
    /// The last N/2 + 1 local nodes' clocks run this many times as fast
    /// (libfaketime), using most of the drift budget; clock faults spare
    /// them. Skipped, said so, without libfaketime.
    pub(crate) drift_rate: Option<f64>,
    pub(crate) store: Option<String>,
    pub(crate) ttl: Duration,
    pub(crate) duration: Duration,
    pub(crate) clients: usize,
    pub(crate) resources: usize,
    pub(crate) groups: usize,
    pub(crate) kinds: Vec<FaultKind>,
    /// Nodes per fault: at least, at most.
    pub(crate) fault_nodes: (usize, usize),
    /// Quiet time between faults: at least, at most.
    pub(crate) fault_gap: (Duration, Duration),
    pub(crate) fault_length: Duration,
    pub(crate) client_pause: Duration,
    pub(crate) holders: Vec<(Holder, u32)>,
    pub(crate) fenced_store: bool,
    pub(crate) check_before_write: bool,
    pub(crate) pause_past: Duration,
    pub(crate) seed: u64,
    /// The lock kind every client takes (each exclusively on its resource);
    /// `None`: every kind at once on the same names (the mixed workload).
    pub(crate) lock_kind: Option<LockKind>,
    /// The chance that a client drops an acquire or release part-way.
    pub(crate) drop_chance: f64,
    /// The lock's lock-delay (zero: none); the checker then holds it to it.
    pub(crate) lock_delay: Duration,
    /// How often an operator inspects and force-releases the resources.
    pub(crate) operator: Pace,
    /// No progress lines (also when stderr is not a terminal).
    pub(crate) quiet: bool,
    pub(crate) mutant: Option<String>,
    pub(crate) command: String,
}

/// What a run left: the saved form, the verdict, what it exercised.
pub(crate) struct Ran {
    pub(crate) file: HistoryFile,
    pub(crate) verdict: Verdict,
    pub(crate) exercised: Exercised,
    /// Why the run proves nothing (empty: it exercised what it was asked to).
    pub(crate) vacuous: Vec<String>,
    pub(crate) fault_errors: Vec<String>,
    pub(crate) elapsed: Duration,
}

/// Why a run did not finish.
pub(crate) enum Stopped {
    /// Nodes, proxies or the store could not be set up.
    Setup(String),
    /// Ctrl-C.
    Interrupted,
}

/// Distinct key prefixes for the runs of one process (`mutants` runs many).
static RUNS: AtomicU64 = AtomicU64::new(0);

impl Plan {
    /// How long an ended owner's key may linger before the audit calls it an orphan.
    pub(crate) fn slack(&self) -> Duration {
        self.ttl / 2
    }

    fn cluster(&self, notes: &mut Vec<String>) -> Result<Cluster, String> {
        if !self.given.is_empty() {
            return Cluster::external(self.given.clone()).map_err(|e| e.to_string());
        }
        let mut builder = Cluster::builder(self.node_count).persistence(self.persistence);
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

    /// The nodes whose clocks run fast with `drift_rate`: the last majority.
    fn drifting_nodes(&self) -> std::ops::Range<usize> {
        if self.drift_rate.is_none() || !self.given.is_empty() {
            return 0..0;
        }
        self.node_count - (self.node_count / 2 + 1)..self.node_count
    }

    /// The node timeout every client uses.
    const NODE_TIMEOUT: Duration = Duration::from_millis(100);

    /// What the checker holds a lock-delay run to: a node applies an
    /// operation within the node timeout of its sending, or, when the
    /// nemesis holds traffic back, the longest fault later.
    fn lock_delay_rule(&self) -> Option<LockDelayRule> {
        let held_back = if self.kinds.is_empty() {
            Duration::ZERO
        } else {
            self.fault_length
        };
        (!self.lock_delay.is_zero()).then(|| LockDelayRule {
            ttl: self.ttl,
            delay: self.lock_delay,
            max_apply: Self::NODE_TIMEOUT + held_back,
        })
    }

    fn redlock(&self, urls: Vec<String>, prefix: &str) -> Result<Redlock, String> {
        let builder = Redlock::builder()
            .nodes(urls)
            .ttl(self.ttl)
            .wait(self.ttl / 2)
            .node_timeout(Self::NODE_TIMEOUT)
            .retry_delay(Duration::from_millis(5))
            .retry_jitter(Duration::from_millis(20))
            .key_prefix(prefix.to_owned());
        // Local nodes run AOF everysec and the nemesis kills them. Redis then
        // acknowledges a write it has not written while a background fsync is
        // slow (it postpones the write up to 2 s), so a kill -9 on a busy disk
        // can lose a granted hold (the first soak on the one engine found an
        // overlap that way). Assumption (c) then needs the delayed-restart
        // rule, which the lock enforces itself with `max_ttl`.
        // With a lock-delay a lost hold blocks for the TTL plus the delay.
        let builder = if self.delayed_restart() {
            builder.max_ttl(self.ttl + self.lock_delay)
        } else {
            builder
        };
        // A fast node is found by comparing two probes of its clock: with a
        // probe every tenth of the TTL each client's handle refuses it from
        // its second probe on, before a hold it granted at the start can
        // expire early (after TTL / rate, for a rate below 5).
        let builder = if self.fast_node.is_some() {
            builder.health_check_interval(self.ttl / 10)
        } else {
            builder
        };
        let redlock = builder.build().map_err(|e| e.to_string())?;
        redlock
            .with_options(&LockOptions {
                lock_delay: self.lock_delay,
                ..*redlock.options()
            })
            .map_err(|e| e.to_string())
    }

    /// Whether the lock enforces the delayed-restart rule: when the nemesis
    /// kills local (AOF everysec) nodes.
    fn delayed_restart(&self) -> bool {
        self.given.is_empty()
            && (self.kinds.contains(&FaultKind::Kill)
                || self.kinds.contains(&FaultKind::RestartMajority))
    }

    fn workload(&self) -> WorkloadConfig {
        WorkloadConfig {
            clients: self.clients,
            resources: (0..self.resources).map(|i| format!("r{i}")).collect(),
            duration: self.duration,
            hold: (Duration::ZERO, Duration::from_millis(50)),
            // Write only with a quarter of the TTL left: margin for a loaded machine.
            write_margin: self.ttl / 4,
            holders: self.holders.clone(),
            pause_past_validity: self.pause_past,
            check_before_write: self.check_before_write,
            fenced_store: self.fenced_store,
            drop_chance: self.drop_chance,
            // Short: most drops land inside the call's first attempt (sends,
            // replies, write-back), not in a wait between attempts.
            drop_within: Duration::from_millis(15),
            seed: self.seed,
            ..WorkloadConfig::default()
        }
    }

    fn nemesis(&self, keys: &LockKeys, pauser: &ClientPauser, epoch: Instant) -> NemesisConfig {
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
            majority_latency: Self::NODE_TIMEOUT * 4 / 5,
            clients: Some(pauser.clone()),
            key_pattern: keys.pattern.clone(),
            epoch: Some(epoch),
            seed: self.seed,
            ..NemesisConfig::default()
        }
    }

    fn info(&self, nodes: usize) -> RunInfo {
        let mut info = RunInfo::default();
        info.command = self.command.clone();
        info.ttl_ms = self.ttl.as_millis() as u64;
        info.slack_ms = self.slack().as_millis() as u64;
        info.nodes = nodes;
        info.clients = self.clients;
        info.groups = self.groups;
        info.duration_ms = self.duration.as_millis() as u64;
        info.nemesis = self.kinds.iter().map(|k| k.name().to_owned()).collect();
        info.fenced_store = self.fenced_store;
        info.mutant = self.mutant.clone();
        info.lock_kind = self.lock_kind.map_or("mixed", LockKind::name).to_owned();
        info.lock_delay = self.lock_delay_rule();
        let ms = |every: Option<Duration>| every.map(|d| d.as_millis() as u64);
        info.inspect_every_ms = ms(self.operator.inspect_every);
        info.force_release_every_ms = ms(self.operator.force_release_every);
        info.seed = self.seed;
        info
    }

    /// Runs the plan to its verdict.
    pub(crate) async fn execute(&self) -> Result<Ran, Stopped> {
        let mut notes = Vec::new();
        let cluster = Arc::new(self.cluster(&mut notes).map_err(Stopped::Setup)?);
        let local_store = match &self.store {
            Some(_) => None,
            None => Some(
                Cluster::start(1).map_err(|e| Stopped::Setup(format!("protected store: {e}")))?,
            ),
        };
        let store_addr = self
            .store
            .clone()
            .or_else(|| local_store.as_ref().map(|c| c.host_port(0)))
            .unwrap_or_default();
        let proxies = Arc::new(
            Proxies::start_groups(&cluster, self.groups)
                .map_err(|e| Stopped::Setup(format!("fault proxies: {e}")))?,
        );
        let run = RUNS.fetch_add(1, Ordering::SeqCst);
        let prefix = format!("redquorum-torture:{}:{run}:", std::process::id());
        let keys = LockKeys::prefixed(&prefix);
        // Built once here so a bad configuration is an error, not a panic in a group.
        let redlock = self
            .redlock(proxies.urls(), &prefix)
            .map_err(Stopped::Setup)?;
        if self.delayed_restart() {
            // Fresh nodes vote only once up for max_ttl: start the clock then,
            // not while every attempt is refused.
            let deadline = Instant::now() + self.ttl + self.lock_delay + Duration::from_secs(5);
            while Instant::now() < deadline
                && redlock
                    .health()
                    .await
                    .iter()
                    .any(|(_, h)| h.refusal().is_some())
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        drop(redlock);
        let workload = self.workload();
        let store = ProtectedStore::new(&store_addr);
        for resource in &workload.resources {
            store
                .reset_blocking(resource)
                .map_err(|e| Stopped::Setup(format!("protected store: {e}")))?;
        }
        if !self.quiet {
            eprintln!(
                "torture: {} nodes{}, {} clients in {} groups × {} resources, ttl {:?}, nemesis {}, for {:?}{}",
                cluster.len(),
                if cluster.is_external() {
                    " (given)"
                } else {
                    " (local)"
                },
                self.clients,
                self.groups,
                self.resources,
                self.ttl,
                if self.kinds.is_empty() {
                    "none".to_owned()
                } else {
                    self.kinds
                        .iter()
                        .map(|k| k.name())
                        .collect::<Vec<_>>()
                        .join(",")
                },
                self.duration,
                self.mutant
                    .as_ref()
                    .map_or(String::new(), |m| format!(", mutant {m}")),
            );
        }
        let history = History::new();
        let started = Instant::now();
        let pauser = ClientPauser::default();
        let mut audit_config = AuditConfig::new(self.ttl);
        audit_config.keys = keys.clone();
        audit_config.min_age = self.slack() / 2;
        audit_config.epoch = history.epoch();
        let audit = KeyAudit::start(cluster.clone(), audit_config);
        let nemesis = (!self.kinds.is_empty()).then(|| {
            Nemesis::start(
                cluster.clone(),
                proxies.clone(),
                self.nemesis(&keys, &pauser, history.epoch()),
            )
        });
        let urls: Vec<Vec<String>> = (0..proxies.groups()).map(|g| proxies.urls_for(g)).collect();
        // The operator goes through the first group's proxies: its faults hit it too.
        let operator_redlock = if self.operator.is_idle() {
            None
        } else {
            Some(
                self.redlock(urls[0].clone(), &prefix)
                    .map_err(Stopped::Setup)?,
            )
        };
        let plan = self.clone();
        let make = move |group: usize| {
            let redlock = plan
                .redlock(urls[group].clone(), &prefix)
                .expect("the same configuration was built above");
            let resources = plan.workload().resources;
            match plan.lock_kind {
                Some(kind) => MixedLocker::single(redlock, kind, resources),
                None => MixedLocker::new(redlock, resources, plan.seed.wrapping_add(group as u64)),
            }
        };
        let finished = Arc::new(AtomicBool::new(false));
        let quiet = self.quiet || !std::io::stderr().is_terminal();
        let progress = tokio::spawn(progress(
            history.clone(),
            started,
            self.duration,
            finished.clone(),
            quiet,
        ));
        let operator_log = OperatorLog::default();
        let operator = operator_redlock.map(|redlock| {
            tokio::spawn(operator::run(
                redlock,
                workload.resources.clone(),
                self.operator,
                history.clone(),
                operator_log.clone(),
                finished.clone(),
            ))
        });
        let history = tokio::select! {
            history = run_workload_groups(history, self.groups, make, store.clone(), &workload, &pauser) => history,
            _ = tokio::signal::ctrl_c() => {
                // Dropping the nemesis resumes any paused node; dropping the
                // cluster kills its nodes: nothing is left behind.
                return Err(Stopped::Interrupted);
            }
        };
        finished.store(true, Ordering::SeqCst);
        let _ = progress.await;
        if let Some(operator) = operator {
            let _ = operator.await;
        }
        let faults: FaultLog = match nemesis {
            Some(nemesis) => tokio::task::spawn_blocking(move || nemesis.stop())
                .await
                .unwrap_or_default(),
            None => FaultLog::default(),
        };
        proxies.heal_all();
        if !self.quiet {
            eprintln!("torture: faults healed; waiting for the lock keys to expire");
        }
        // The TTL, plus 3 s for commands still in flight (a chunk the proxy was
        // delaying when healed lands up to its max latency later).
        let within = self.ttl + Duration::from_secs(3);
        let (leaked, cluster, restarted) = tokio::task::spawn_blocking(move || {
            // A node a fault left down (a failed restart) is started again,
            // so the leak check can read it.
            let restarted: Vec<String> = (0..cluster.len())
                .filter(|&n| !cluster.is_external() && !cluster.is_running(n))
                .map(|n| match cluster.restart(n) {
                    Ok(()) => format!("node {n} was down after the nemesis: restarted"),
                    Err(e) => {
                        format!("node {n} was down after the nemesis and did not restart: {e}")
                    }
                })
                .collect();
            (lock_keys_after(&cluster, &keys, within), cluster, restarted)
        })
        .await
        .map_err(|e| Stopped::Setup(e.to_string()))?;
        notes.extend(restarted);
        let mut unchecked = None;
        let leaked = leaked.unwrap_or_else(|e| {
            unchecked = Some(format!("the leak check could not read every node: {e}"));
            Vec::new()
        });
        let keys_seen = tokio::task::spawn_blocking(move || audit.stop())
            .await
            .unwrap_or_default();
        let protected = store
            .values(&workload.resources)
            .map_err(|e| Stopped::Setup(format!("protected store: {e}")))?;
        let file = HistoryFile {
            info: self.info(cluster.len()),
            sessions: history.sessions(),
            faults: faults.events.clone(),
            keys: keys_seen,
            operator: operator_log.calls(),
            leaked,
            protected,
        };
        let verdict = file.check();
        let exercised = Exercised::measure(&file.sessions, &file.faults);
        let struck: Vec<FaultKind> = self
            .kinds
            .iter()
            .copied()
            .filter(|k| {
                !faults
                    .errors
                    .iter()
                    .any(|e| e.starts_with(&format!("{} skipped", k.name())))
            })
            .collect();
        let holders: Vec<Holder> = self
            .holders
            .iter()
            .filter(|(_, w)| *w > 0)
            .map(|(h, _)| *h)
            .collect();
        let mut vacuous = exercised.vacuous(self.duration, &struck, &holders);
        vacuous.extend(unchecked);
        vacuous.extend(lock_delay_untested(&file));
        vacuous.extend(operator_untested(&file));
        let mut fault_errors = notes;
        fault_errors.extend(faults.errors);
        Ok(Ran {
            file,
            verdict,
            exercised,
            vacuous,
            fault_errors,
            elapsed: started.elapsed(),
        })
    }
}

/// Why a run with a lock-delay proves nothing about it: no holder vanished
/// (released after its hold expired), so the rule had nothing to judge. For
/// a run and for its `--recheck`.
pub(crate) fn lock_delay_untested(file: &HistoryFile) -> Option<String> {
    let rule = file.info.lock_delay.as_ref()?;
    (vanished_holders(&file.sessions, rule) == 0).then(|| {
        "no holder vanished (released after its hold expired), so the lock-delay was never tested"
            .to_owned()
    })
}

/// Why a run with an operator proves nothing about its calls: no
/// inspection named a holder, or no force-release ousted one. For a run
/// and for its `--recheck`.
pub(crate) fn operator_untested(file: &HistoryFile) -> Vec<String> {
    let mut untested = Vec::new();
    if file.info.inspect_every_ms.is_some() && inspections_naming_holders(&file.operator) == 0 {
        untested.push("no inspection named a holder, so inspection was never tested".to_owned());
    }
    if file.info.force_release_every_ms.is_some()
        && ousted_holders(&file.sessions, &file.operator) == 0
    {
        untested.push(
            "no force-release ousted a holder, so its fencing token was never tested".to_owned(),
        );
    }
    untested
}

/// A line on stderr every few seconds, so a long run shows it is alive.
async fn progress(
    history: History,
    started: Instant,
    duration: Duration,
    finished: Arc<AtomicBool>,
    quiet: bool,
) {
    let every = Duration::from_secs(5);
    let mut next = started + every;
    while !finished.load(Ordering::SeqCst) {
        if !quiet && Instant::now() >= next {
            let elapsed = started.elapsed().min(duration).as_secs();
            eprintln!(
                "torture: {elapsed}s / {}s, {} sessions",
                duration.as_secs(),
                history.len()
            );
            next += every;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(kinds: Vec<FaultKind>, given: Vec<String>) -> Plan {
        Plan {
            given,
            node_count: 3,
            persistence: Persistence::AofEverySec,
            fast_clocks: None,
            clock_ahead: None,
            fast_node: None,
            drift_rate: None,
            store: None,
            // Longer than this test's nodes have been up.
            ttl: Duration::from_secs(30),
            duration: Duration::from_secs(1),
            clients: 1,
            resources: 1,
            groups: 1,
            kinds,
            fault_nodes: (1, 1),
            fault_gap: (Duration::ZERO, Duration::ZERO),
            fault_length: Duration::from_millis(100),
            client_pause: Duration::from_millis(100),
            holders: vec![(Holder::Brief, 1)],
            fenced_store: true,
            check_before_write: true,
            pause_past: Duration::from_millis(100),
            seed: 1,
            lock_kind: Some(LockKind::Plain),
            drop_chance: 0.0,
            lock_delay: Duration::ZERO,
            operator: Pace::default(),
            quiet: true,
            mutant: None,
            command: String::new(),
        }
    }

    /// AOF everysec can lose an acknowledged write to a kill -9 on a busy
    /// disk, so with the kill nemesis on local nodes the lock must not count
    /// a node that has been up for less than the TTL; without kills, or on
    /// given nodes, it counts them at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_kills_on_local_nodes_a_node_up_less_than_the_ttl_does_not_vote() {
        let cluster = Cluster::builder(3)
            .persistence(Persistence::AofEverySec)
            .start()
            .expect("nodes");
        let killing = plan(vec![FaultKind::Kill, FaultKind::Stall], Vec::new());
        let refused = killing.redlock(cluster.urls(), "t:k:").unwrap();
        assert!(refused.try_lock("r").await.is_err());
        let calm = plan(vec![FaultKind::Stall], Vec::new());
        let counted = calm.redlock(cluster.urls(), "t:c:").unwrap();
        counted
            .try_lock("r")
            .await
            .expect("fresh nodes vote")
            .forget();
        assert!(!plan(vec![FaultKind::Kill], cluster.urls()).delayed_restart());
    }
}
