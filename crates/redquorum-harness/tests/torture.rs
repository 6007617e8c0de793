//! A torture run composed by the harness around a lock it does not know:
//! here a lock local to the process (one table of holds behind a mutex,
//! shared by every client group), which is exclusive by construction, so
//! the run must find nothing wrong.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redquorum_harness::{
    FaultKind, Grant, Locker, NoOperator, OperatorPace, Refusal, TortureLock, TorturePlan,
    TortureStopped,
};

/// Holds by resource: the owner and its deadline; and the last fencing token.
#[derive(Debug, Clone, Default)]
struct Local {
    holds: Arc<Mutex<HashMap<String, (String, Instant)>>>,
    fences: Arc<AtomicU64>,
    ttl: Duration,
}

impl Locker for Local {
    type Held = (String, String);

    async fn acquire(&self, resource: &str) -> Result<Grant<(String, String)>, Refusal> {
        let mut holds = self.holds.lock().unwrap();
        let now = Instant::now();
        if holds.get(resource).is_some_and(|(_, until)| *until > now) {
            return Err(Refusal::new("contended", "held"));
        }
        let owner = format!("o{}", self.fences.fetch_add(1, Ordering::SeqCst) + 1);
        let deadline = now + self.ttl;
        holds.insert(resource.to_owned(), (owner.clone(), deadline));
        let fence = self.fences.load(Ordering::SeqCst);
        let held = (resource.to_owned(), owner.clone());
        Ok(Grant::new(held, owner, deadline).with_fence(Some(fence)))
    }

    async fn release(&self, (resource, owner): (String, String)) -> Result<(), String> {
        let mut holds = self.holds.lock().unwrap();
        if holds.get(&resource).is_some_and(|(o, _)| *o == owner) {
            holds.remove(&resource);
        }
        Ok(())
    }
}

impl TortureLock for Local {
    type Locker = Local;
    type Operator = NoOperator;

    fn name(&self) -> String {
        "local".into()
    }

    async fn prepare(_: &TorturePlan<Self>, urls: Vec<String>, prefix: &str) -> Result<(), String> {
        assert!(!urls.is_empty() && !prefix.is_empty());
        Ok(())
    }

    fn locker(plan: &TorturePlan<Self>, _: usize, _: Vec<String>, _: &str) -> Local {
        Local {
            ttl: plan.ttl,
            ..plan.lock.clone()
        }
    }
}

fn plan() -> TorturePlan<Local> {
    TorturePlan {
        node_count: 3,
        ttl: Duration::from_secs(1),
        duration: Duration::from_secs(1),
        clients: 4,
        kinds: vec![FaultKind::Reset, FaultKind::Latency],
        ..TorturePlan::new(Local::default())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_around_an_exclusive_lock_finds_nothing() {
    let run = plan().execute().await.expect("the run finishes");
    assert!(run.verdict.is_ok(), "{:?}", run.verdict.violations);
    assert!(run.exercised.granted > 0);
    assert!(run.exercised.completed > 0, "the fenced store took writes");
    assert_eq!(run.file.info.lock_kind, "local");
    assert_eq!(run.file.info.nodes, 3);
    assert!(run.file.sessions.iter().any(|s| s.group == 1));
    assert!(run.file.leaked.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_or_a_missing_operator_stops_the_run() {
    let stopped = plan().execute_until(async {}).await;
    assert_eq!(
        stopped.err(),
        Some(TortureStopped::Interrupted { sessions: 0 }),
        "interrupted before a session was granted"
    );
    let with_operator = TorturePlan {
        operator: OperatorPace {
            inspect_every: Some(Duration::from_millis(20)),
            force_release_every: None,
            ..OperatorPace::default()
        },
        kinds: Vec::new(),
        ..plan()
    };
    let stopped = with_operator.execute().await;
    assert!(matches!(stopped, Err(TortureStopped::Setup(why)) if why.contains("no operator")));
}
