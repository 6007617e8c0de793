//! The workload against a fenced store: a holder without a fencing token
//! (the lock's write-back failed) must not touch the store, since a fenced
//! resource cannot check an unfenced write; one that never asked for a
//! token only reads it. Sessions on names of their own
//! (`WorkloadConfig::own_name_chance`) lock only their client's name.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redquorum_harness::{
    Cluster, Grant, Locker, Outcome, ProtectedStore, Refusal, WorkloadConfig, run_workload,
};

/// Grants every request at once for a minute; hands out increasing fencing
/// tokens, or none (`tokenless`: never asked for).
struct Granting {
    tokens: bool,
    tokenless: bool,
    next: AtomicU64,
}

impl Locker for Granting {
    type Held = ();

    async fn acquire(&self, _resource: &str) -> Result<Grant<()>, Refusal> {
        let fence = self
            .tokens
            .then(|| self.next.fetch_add(1, Ordering::SeqCst) + 1);
        let deadline = Instant::now() + Duration::from_secs(60);
        let grant = Grant::new((), "owner".into(), deadline).with_fence(fence);
        Ok(if self.tokenless {
            grant.without_token()
        } else {
            grant
        })
    }

    async fn release(&self, _held: ()) -> Result<(), String> {
        Ok(())
    }
}

async fn run(tokens: bool, tokenless: bool) -> (Vec<redquorum_harness::Session>, i64) {
    let cluster = Cluster::start(1).expect("store node");
    let store = ProtectedStore::new(&cluster.host_port(0));
    store.reset_blocking("r").unwrap();
    let config = WorkloadConfig {
        clients: 1,
        resources: vec!["r".into()],
        duration: Duration::from_millis(200),
        fenced_store: true,
        ..WorkloadConfig::default()
    };
    let locker = Arc::new(Granting {
        tokens,
        tokenless,
        next: AtomicU64::new(0),
    });
    let history = run_workload(locker, store.clone(), &config).await;
    let value = store.read_blocking("r").unwrap();
    (history.sessions(), value)
}

#[tokio::test]
async fn a_holder_without_a_fencing_token_leaves_a_fenced_store_alone() {
    let (sessions, value) = run(false, false).await;
    assert!(!sessions.is_empty());
    for session in &sessions {
        assert_eq!(session.read, None, "{session:?}");
        assert_eq!(session.write_start, None, "{session:?}");
        assert_eq!(session.outcome, Outcome::Abandoned, "{session:?}");
        assert!(session.release.is_some(), "{session:?}");
    }
    assert_eq!(value, 0);
}

#[tokio::test]
async fn holders_with_tokens_write_to_a_fenced_store() {
    let (sessions, value) = run(true, false).await;
    let completed = sessions
        .iter()
        .filter(|s| s.outcome == Outcome::Completed)
        .count();
    assert!(completed > 0, "{sessions:?}");
    assert_eq!(value, completed as i64);
}

#[tokio::test]
async fn a_holder_that_never_asked_for_a_token_only_reads_a_fenced_store() {
    let (sessions, value) = run(false, true).await;
    assert!(!sessions.is_empty());
    for session in &sessions {
        assert!(session.tokenless, "{session:?}");
        assert_eq!(session.read, Some(0), "{session:?}");
        assert_eq!(session.write_start, None, "{session:?}");
        assert_eq!(session.outcome, Outcome::ReadOnly, "{session:?}");
    }
    assert_eq!(value, 0);
}

#[tokio::test]
async fn a_session_on_a_name_of_its_own_locks_only_its_clients_name() {
    let cluster = Cluster::start(1).expect("store node");
    let store = ProtectedStore::new(&cluster.host_port(0));
    let config = WorkloadConfig {
        clients: 2,
        resources: vec!["r".into()],
        duration: Duration::from_millis(300),
        fenced_store: true,
        own_name_chance: 0.5,
        ..WorkloadConfig::default()
    };
    assert_eq!(config.names(), ["r", "own0", "own1"]);
    for name in config.names() {
        store.reset_blocking(&name).unwrap();
    }
    let locker = Arc::new(Granting {
        tokens: true,
        tokenless: false,
        next: AtomicU64::new(0),
    });
    let sessions = run_workload(locker, store.clone(), &config)
        .await
        .sessions();
    for name in config.names() {
        let on_it: Vec<_> = sessions.iter().filter(|s| s.resource == name).collect();
        assert!(!on_it.is_empty(), "no session on {name}");
        if let Some(client) = name.strip_prefix("own") {
            assert!(
                on_it.iter().all(|s| s.client.to_string() == client),
                "{on_it:?}"
            );
        }
        let completed = on_it
            .iter()
            .filter(|s| s.outcome == Outcome::Completed)
            .count();
        assert_eq!(
            store.read_blocking(&name).unwrap(),
            completed as i64,
            "{name}"
        );
    }
}
