//! Shared by the scenario and checker tests: `redquorum::Redlock` as the
//! harness's `Locker`, and a scenario runner (workload + faults + checker).
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::time::Duration;

use redquorum::Redlock;
use redquorum_adapter::{KindLocker, LockKind};
use redquorum_harness::{
    AuditConfig, ClientPauser, Cluster, Evidence, Exercised, FaultLog, History, KeyAudit, Nemesis,
    NemesisConfig, ProtectedStore, Proxies, Verdict, WorkloadConfig, check, check_evidence,
    leaks_after, run_workload, run_workload_groups,
};

/// The lock under test, as the workload sees it: the one adapter every
/// driver uses (`redquorum_adapter`), with the owner and fencing tokens in
/// each grant.
pub fn locker(redlock: Redlock) -> KindLocker {
    KindLocker::for_history(redlock, LockKind::Plain)
}

/// A short name for why a lock was refused.
pub fn kind(error: &redquorum::Error) -> &'static str {
    redquorum_adapter::refusal_kind(error)
}

/// Nodes behind fault proxies, a separate protected store, and a Redlock through the proxies.
pub struct Setup {
    pub cluster: Arc<Cluster>,
    pub proxies: Arc<Proxies>,
    pub store_node: Cluster,
    pub redlock: Redlock,
    pub ttl: Duration,
}

/// The scenarios' lock settings, through the given (proxy) URLs.
fn redlock(urls: Vec<String>, ttl: Duration) -> Redlock {
    Redlock::builder()
        .nodes(urls)
        .ttl(ttl)
        .wait(ttl / 2)
        .node_timeout(Duration::from_millis(100))
        .retry_delay(Duration::from_millis(5))
        .retry_jitter(Duration::from_millis(20))
        .build()
        .expect("valid configuration")
}

/// What a run under the nemesis left.
pub struct NemesisRun {
    pub history: History,
    pub verdict: Verdict,
    pub faults: FaultLog,
    pub exercised: Exercised,
}

impl Setup {
    pub fn new(cluster: Cluster, ttl: Duration) -> Self {
        Self::with_groups(cluster, ttl, 1)
    }

    /// Clients in `groups` groups, each behind proxies of its own.
    pub fn with_groups(cluster: Cluster, ttl: Duration, groups: usize) -> Self {
        let proxies = Proxies::start_groups(&cluster, groups).expect("fault proxies");
        let store_node = Cluster::start(1).expect("protected store node");
        let redlock = redlock(proxies.urls(), ttl);
        Self {
            cluster: Arc::new(cluster),
            proxies: Arc::new(proxies),
            store_node,
            redlock,
            ttl,
        }
    }

    pub fn store(&self) -> ProtectedStore {
        ProtectedStore::new(&self.store_node.host_port(0))
    }

    /// Runs the workload while `faults` runs on a thread, heals, waits out the
    /// TTL, and checks. `faults` gets a "workload done?" function: it must
    /// return (every fault healed) soon after that turns true. Its result is
    /// handed back.
    pub async fn run<F, R>(&self, config: &WorkloadConfig, faults: F) -> (History, Verdict, R)
    where
        F: FnOnce(&Arc<Cluster>, &Arc<Proxies>, &dyn Fn() -> bool) -> R + Send + 'static,
        R: Send + 'static,
    {
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (cluster, proxies, flag) = (self.cluster.clone(), self.proxies.clone(), done.clone());
        let fault_thread = std::thread::spawn(move || {
            let is_done = || flag.load(std::sync::atomic::Ordering::SeqCst);
            faults(&cluster, &proxies, &is_done)
        });
        // Set `done` even if this future panics or is dropped, so the fault
        // thread ends and releases the cluster (whose Drop kills the nodes).
        let guard = DoneOnDrop(done);
        let locker = Arc::new(locker(self.redlock.clone()));
        let history = run_workload(locker, self.store(), config).await;
        drop(guard);
        let result = tokio::task::spawn_blocking(move || fault_thread.join())
            .await
            .expect("join")
            .expect("the fault thread panicked");
        self.proxies.heal_all();
        let verdict = self.check(&history, &config.resources).await;
        (history, verdict, result)
    }

    /// Runs the workload in the setup's client groups (each on its own
    /// runtime, so a client pause freezes one group) under a nemesis, with
    /// the key audit on; heals, waits out the TTL and checks everything.
    pub async fn run_nemesis(&self, config: &WorkloadConfig, nemesis: NemesisConfig) -> NemesisRun {
        let history = History::new();
        let pauser = ClientPauser::default();
        let mut audit_config = AuditConfig::new(self.ttl);
        audit_config.min_age = self.ttl / 4;
        audit_config.epoch = history.epoch();
        let audit = KeyAudit::start(self.cluster.clone(), audit_config);
        let nemesis = Nemesis::start(
            self.cluster.clone(),
            self.proxies.clone(),
            NemesisConfig {
                clients: Some(pauser.clone()),
                epoch: Some(history.epoch()),
                ..nemesis
            },
        );
        let urls: Vec<Vec<String>> = (0..self.proxies.groups())
            .map(|g| self.proxies.urls_for(g))
            .collect();
        let ttl = self.ttl;
        let make = move |group: usize| locker(redlock(urls[group].clone(), ttl));
        let groups = self.proxies.groups();
        let history =
            run_workload_groups(history, groups, make, self.store(), config, &pauser).await;
        let faults = tokio::task::spawn_blocking(move || nemesis.stop())
            .await
            .expect("join the nemesis");
        self.proxies.heal_all();
        let cluster = self.cluster.clone();
        let (leaks, keys) = tokio::task::spawn_blocking(move || {
            let leaks = leaks_after(&cluster, "lock:*", ttl + Duration::from_secs(3));
            (leaks, audit.stop())
        })
        .await
        .expect("join the leak check");
        let leaks = leaks.expect("scan nodes for leaks");
        let values = self
            .store()
            .values(&config.resources)
            .expect("read protected values");
        let sessions = history.sessions();
        let verdict = check_evidence(&Evidence {
            leaked: &leaks,
            keys: &keys,
            faults: &faults.events,
            // The holds' time left is this TTL less their age (the hold rules).
            ttl,
            slack: ttl / 2,
            ..Evidence::new(&sessions, &values)
        });
        let exercised = Exercised::measure(&sessions, &faults.events);
        NemesisRun {
            history,
            verdict,
            faults,
            exercised,
        }
    }

    /// Waits (bounded) for the lock keys to expire, then checks. The bound is
    /// the max TTL plus 3 s for commands still in flight (a chunk the proxy
    /// was delaying when healed lands up to its max latency later).
    pub async fn check(&self, history: &History, resources: &[String]) -> Verdict {
        let leaks = leaks_after(&self.cluster, "lock:*", self.ttl + Duration::from_secs(3))
            .expect("scan nodes for leaks");
        let values = self
            .store()
            .values(resources)
            .expect("read protected values");
        check(&history.sessions(), &values, &leaks)
    }
}

struct DoneOnDrop(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// How many runs a scenario gets when its runs are void or vacuous.
const RUNS: usize = 3;

/// Runs a scenario and asserts it found nothing: `attempt` starts fresh
/// nodes, runs, makes its own checks and hands back the verdict and the
/// history, or why the run proved nothing (`Err`: say, its fault never
/// struck while a lock was held, which a loaded machine's scheduling can
/// cause). A run that found violations while the machine's wall clock
/// stepped (`History::host_steps`: a virtual machine restored from a
/// snapshot moves every local node's clock at once, outside the lock's
/// assumptions) is void. A void or vacuous run runs again, up to three
/// runs in all; a run with violations and no step fails at once.
pub async fn clean_run<F, Fut>(mut attempt: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(Verdict, History), String>>,
{
    let mut why = Vec::new();
    for run in 1..=RUNS {
        let (verdict, history) = match attempt().await {
            Ok(judged) => judged,
            Err(vacuous) => {
                eprintln!("run {run} of {RUNS} proved nothing: {vacuous}");
                why.push(vacuous);
                continue;
            }
        };
        let steps = history.host_steps();
        if verdict.is_ok() || steps.is_empty() {
            return assert_no_violations(&verdict, &history);
        }
        let steps: Vec<String> = steps.iter().map(ToString::to_string).collect();
        let void = format!(
            "void: {} violations, and {}",
            verdict.violations.len(),
            steps.join("; ")
        );
        eprintln!("run {run} of {RUNS} is {void}");
        why.push(void);
    }
    panic!("none of {RUNS} runs proved anything:\n{}", why.join("\n"));
}

/// Asserts a clean verdict, printing every violation otherwise.
/// The sessions (voters included) are kept in a file named in the
/// message: a rare failure can then be read in full.
pub fn assert_no_violations(verdict: &Verdict, history: &History) {
    if verdict.is_ok() {
        return;
    }
    let report: Vec<String> = verdict.violations.iter().map(ToString::to_string).collect();
    let kept = keep_sessions(history);
    panic!(
        "{} violations ({:?}) in {} sessions ({kept}):\n{}",
        verdict.violations.len(),
        verdict.by_kind(),
        history.sessions().len(),
        report.join("\n")
    );
}

/// Writes `history`'s sessions as JSON to a file of their own; says where.
fn keep_sessions(history: &History) -> String {
    let path = std::env::temp_dir().join(format!(
        "redquorum-failed-sessions-{}-{:?}.json",
        std::process::id(),
        std::thread::current().id()
    ));
    let written = serde_json::to_vec_pretty(&history.sessions())
        .map_err(std::io::Error::from)
        .and_then(|json| std::fs::write(&path, json));
    match written {
        Ok(()) => format!("sessions kept in {}", path.display()),
        Err(error) => format!("sessions not kept: {error}"),
    }
}

/// How many sessions completed their critical section.
pub fn completed(history: &History) -> usize {
    history
        .sessions()
        .iter()
        .filter(|s| s.outcome == redquorum_harness::Outcome::Completed)
        .count()
}
