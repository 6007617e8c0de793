//! The workload records the owner token of every attempt each session's
//! acquire made (the lock tells them through the adapter), refused and
//! dropped attempts included: the orphan-key rule judges a key such an
//! attempt left by that attempt's own end.

mod workload;

use std::time::Duration;

use redquorum::Redlock;
use redquorum_harness::{Cluster, WorkloadConfig};
use workload::{Setup, assert_no_violations};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_session_carries_the_tokens_its_acquire_tried() {
    let ttl = Duration::from_millis(1500);
    let setup = Setup::new(Cluster::start(3).expect("nodes"), ttl);
    let config = WorkloadConfig {
        clients: 6,
        resources: vec!["one".into()],
        duration: Duration::from_secs(2),
        hold: (Duration::from_millis(5), Duration::from_millis(30)),
        write_margin: ttl / 3,
        drop_chance: 0.2,
        ..WorkloadConfig::default()
    };
    // A rival of another process (another Redlock) holds the name for
    // longer than the clients wait: this process's callers do not try
    // against their own holds (wait/first_try.rs), so without it a dropped
    // acquire has seldom tried before it is cut, and none is refused.
    let (history, verdict, ()) = setup
        .run(&config, move |cluster, _, done| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let rival = Redlock::builder()
                    .nodes(cluster.urls())
                    .ttl(ttl)
                    .build()
                    .expect("valid configuration");
                while !done() {
                    if let Ok(lock) = rival.try_lock("one").await {
                        tokio::time::sleep(ttl * 2 / 3).await;
                        // Best effort: a release that fails leaves the
                        // rival's key to its TTL, which only delays the clients.
                        let _ = lock.release().await;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            });
        })
        .await;
    assert_no_violations(&verdict, &history);
    let sessions = history.sessions();
    let granted: Vec<_> = sessions.iter().filter(|s| s.grant.is_some()).collect();
    let not_granted: Vec<_> = sessions.iter().filter(|s| s.grant.is_none()).collect();
    // A granted acquire's last attempt is the one that was granted; a
    // waiting one tried before it.
    for s in &granted {
        assert_eq!(s.tried.last(), Some(&s.owner), "{s:?}");
    }
    let retried = granted.iter().filter(|s| s.tried.len() > 1).count();
    // A refused acquire tried at least once; a dropped one may have been
    // cut before its first attempt. No attempt's token is a granted hold's.
    for s in &not_granted {
        assert!(s.dropped.is_some() || !s.tried.is_empty(), "{s:?}");
        assert!(
            s.tried
                .iter()
                .all(|t| granted.iter().all(|g| &g.owner != t)),
            "{s:?}"
        );
    }
    let told = not_granted.iter().filter(|s| !s.tried.is_empty()).count();
    assert!(
        !granted.is_empty() && retried > 0 && told > 0,
        "{} granted ({retried} after retries), {} not granted ({told} with tokens)",
        granted.len(),
        not_granted.len()
    );
}
