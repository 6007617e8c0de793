//! Shared by the scenario and checker tests: `redquorum::Redlock` as the
//! harness's `Locker` (through `redquorum_benches::RedquorumLocker`, as the
//! CLI drives it), and a scenario runner (workload + faults + checker).
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::time::Duration;

use redquorum::Redlock;
use redquorum_benches::RedquorumLocker;
use redquorum_harness::{
    Cluster, History, ProtectedStore, Proxies, Verdict, WorkloadConfig, check, leaks_after,
    run_workload,
};

/// The lock under test, as the workload sees it: the one adapter every
/// driver uses, with the owner and fencing tokens in each grant.
pub fn locker(redlock: Redlock) -> RedquorumLocker {
    RedquorumLocker::for_history(redlock)
}

/// A short name for why a lock was refused.
pub fn kind(error: &redquorum::Error) -> &'static str {
    redquorum_benches::refusal_kind(error)
}

/// Nodes behind fault proxies, a separate protected store, and a Redlock through the proxies.
pub struct Setup {
    pub cluster: Arc<Cluster>,
    pub proxies: Arc<Proxies>,
    pub store_node: Cluster,
    pub redlock: Redlock,
    pub ttl: Duration,
}

impl Setup {
    pub fn new(cluster: Cluster, ttl: Duration) -> Self {
        let proxies = Proxies::start(&cluster).expect("fault proxies");
        let store_node = Cluster::start(1).expect("protected store node");
        let redlock = Redlock::builder()
            .nodes(proxies.urls())
            .ttl(ttl)
            .wait(ttl / 2)
            .node_timeout(Duration::from_millis(100))
            .retry_delay(Duration::from_millis(5))
            .retry_jitter(Duration::from_millis(20))
            .build()
            .expect("valid configuration");
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

/// Asserts a clean verdict, printing every violation otherwise.
pub fn assert_no_violations(verdict: &Verdict, history: &History) {
    let report: Vec<String> = verdict.violations.iter().map(ToString::to_string).collect();
    assert!(
        verdict.is_ok(),
        "{} violations ({:?}) in {} sessions:\n{}",
        verdict.violations.len(),
        verdict.by_kind(),
        history.sessions().len(),
        report.join("\n")
    );
}

/// How many sessions completed their critical section.
pub fn completed(history: &History) -> usize {
    history
        .sessions()
        .iter()
        .filter(|s| s.outcome == redquorum_harness::Outcome::Completed)
        .count()
}
