//! Node health on real nodes: role, eviction policy, persistence, and the
//! delayed-restart rule (a restarted non-durable node's votes are refused until
//! the max TTL has passed), also as seen through the metrics facade.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::{cluster, eventually};
use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use redquorum::{Durability, Error, Ineligible, NodeOutcome, Redlock, Role};
use redquorum_harness::{Cluster, Persistence};

const MAX_TTL: Duration = Duration::from_secs(3);

fn builder(cluster: &Cluster) -> redquorum::RedlockBuilder {
    Redlock::builder()
        .nodes(cluster.urls())
        .ttl(Duration::from_secs(1))
        .node_timeout(Duration::from_millis(100))
        .health_check_interval(Duration::from_millis(100))
}

/// Waits until a lock can be taken (fresh non-durable nodes are refused at first).
async fn wait_until_lockable(redlock: &Redlock, resource: &str) {
    let ok = eventually(MAX_TTL + Duration::from_secs(15), || async {
        match redlock.try_lock(resource).await {
            Ok(lock) => lock.release().await.is_ok(),
            Err(_) => false,
        }
    })
    .await;
    assert!(ok, "the nodes never became eligible");
}

fn node0_outcome(err: &Error) -> Option<&NodeOutcome> {
    err.outcomes()?.iter().next().map(|(_, outcome)| outcome)
}

#[tokio::test]
async fn a_restarted_node_without_persistence_is_refused_until_max_ttl_passes() {
    let _ = recorder();
    let cluster = cluster(3);
    let redlock = builder(&cluster).max_ttl(MAX_TTL).build().unwrap();
    let node0 = redlock.nodes().next().unwrap().to_string();
    wait_until_lockable(&redlock, "restart").await;

    // Node 1 frozen: node 0 and node 2 must both vote for a quorum of 2.
    cluster.pause(1).unwrap();
    let restarted = Instant::now();
    cluster.restart(0).unwrap();

    let mut refused_seen = false;
    let acquired_at = loop {
        assert!(
            restarted.elapsed() < MAX_TTL + Duration::from_secs(20),
            "never acquired after the restart"
        );
        match redlock.try_lock("restart").await {
            Ok(lock) => {
                let at = Instant::now();
                lock.release().await.unwrap();
                break at;
            }
            Err(err) => {
                if let Some(NodeOutcome::Refused(reason)) = node0_outcome(&err) {
                    assert!(
                        matches!(
                            reason,
                            Ineligible::RecentRestart { .. } | Ineligible::Unverified
                        ),
                        "{reason}"
                    );
                    assert!(err.to_string().contains("unavailable"), "{err}");
                    refused_seen = true;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    cluster.resume(1).unwrap();
    assert!(refused_seen, "node 0's vote was never refused");
    // The node started after `restarted`, so its uptime reached MAX_TTL no earlier than this:
    assert!(
        acquired_at >= restarted + MAX_TTL,
        "acquired {:?} after the restart, before the max ttl {MAX_TTL:?}",
        acquired_at - restarted
    );
    // ... and the refusals were counted per node.
    let refused = recorder().counter_sum("redquorum_vote_refused_total", &format!("node={node0}"));
    assert!(
        refused >= 1,
        "refusals not in the metrics: {:?}",
        recorder().keys()
    );
}

#[tokio::test]
async fn without_max_ttl_a_restarted_empty_node_still_votes() {
    // The unsafe default the rule exists for: the same scenario, and the
    // restarted (empty) node's vote counts.
    let cluster = cluster(3);
    let redlock = builder(&cluster).build().unwrap();
    redlock
        .lock("no-rule")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    cluster.pause(1).unwrap();
    cluster.restart(0).unwrap();
    let ok = eventually(Duration::from_secs(10), || async {
        match redlock.try_lock("no-rule").await {
            Ok(lock) => lock.release().await.is_ok(),
            Err(_) => false,
        }
    })
    .await;
    cluster.resume(1).unwrap();
    // node 1 was frozen, so the quorum of 2 included the restarted node 0
    assert!(ok, "never acquired");
}

#[tokio::test]
async fn durable_nodes_vote_right_after_start() {
    let cluster = Cluster::start_with(3, Persistence::AofAlways).unwrap();
    let redlock = builder(&cluster)
        .max_ttl(Duration::from_secs(600))
        .build()
        .unwrap();
    // uptime far below the max ttl, but every write is fsynced
    let lock = redlock
        .try_lock("durable")
        .await
        .expect("durable nodes vote");
    lock.release().await.unwrap();
    for (node, health) in redlock.health().await {
        assert_eq!(health.durability(), Durability::Fsync, "{node}: {health}");
        assert_eq!(health.refusal(), None, "{node}: {health}");
    }
}

#[tokio::test]
async fn fresh_nodes_without_persistence_are_refused_and_reported() {
    let cluster = cluster(3);
    let redlock = builder(&cluster)
        .max_ttl(Duration::from_secs(600))
        .build()
        .unwrap();
    let err = redlock.try_lock("fresh").await.unwrap_err();
    let outcomes = err.outcomes().expect("per-node outcomes");
    assert_eq!(outcomes.acquired(), 0, "{outcomes}");
    assert!(
        outcomes
            .iter()
            .any(|(_, o)| matches!(o, NodeOutcome::Refused(Ineligible::RecentRestart { .. }))),
        "{outcomes:?}"
    );
    // the unwind removed the keys the refused nodes had set
    assert!(
        common::values(&cluster, "lock:fresh")
            .iter()
            .all(Option::is_none)
    );
    for (node, health) in redlock.health().await {
        assert!(
            matches!(health.refusal(), Some(Ineligible::RecentRestart { .. })),
            "{node}: {health}"
        );
        assert!(health.to_string().contains("votes refused"), "{health}");
    }
}

#[tokio::test]
async fn health_reports_replicas_and_evicting_policies() {
    let _ = recorder();
    let cluster = cluster(3);
    cluster
        .command(1, &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"])
        .unwrap();
    let port0 = cluster.port(0).to_string();
    cluster
        .command(2, &["REPLICAOF", "127.0.0.1", &port0])
        .unwrap();
    let redlock = builder(&cluster).build().unwrap();
    let ok = eventually(Duration::from_secs(10), || async {
        let health = redlock.health().await;
        health[2].1.role() == Role::Replica && health[1].1.evicts_lock_keys() == Some(true)
    })
    .await;
    let health = redlock.health().await;
    assert!(ok, "{health:?}");
    assert_eq!(health[0].1.role(), Role::Master);
    assert_eq!(health[0].1.eviction_policy(), Some("noeviction"));
    assert_eq!(health[0].1.evicts_lock_keys(), Some(false));
    assert_eq!(health[0].1.durability(), Durability::NotDurable);
    assert!(health[0].1.uptime().is_some());
    assert_eq!(health[2].1.refusal(), Some(&Ineligible::Replica));
    let replica = health[2].0.to_string();
    let gauge_ok = eventually(Duration::from_secs(5), || async {
        recorder().gauge(&format!("redquorum_node_eligible{{node={replica}}}")) == Some(0.0)
    })
    .await;
    assert!(gauge_ok, "eligibility gauge: {:?}", recorder().keys());
}

#[tokio::test]
async fn lock_operations_are_counted_under_the_documented_names() {
    let _ = recorder();
    let cluster = cluster(3);
    let redlock = builder(&cluster).build().unwrap();
    let before = |name: &str, label: &str| recorder().counter_sum(name, label);
    let acquired = before("redquorum_acquire_total", "result=acquired");
    let contended = before("redquorum_acquire_total", "result=contended");
    let extended = before("redquorum_extend_total", "result=extended");
    let released = before("redquorum_release_total", "result=released");
    let lost = before("redquorum_lease_lost_total", "");
    let mut lock = redlock.lock("counted").await.unwrap();
    assert!(redlock.try_lock("counted").await.is_err());
    lock.extend().await.unwrap();
    let mut stale = redlock.lock("counted-2").await.unwrap();
    for i in 0..3 {
        cluster.command(i, &["DEL", stale.key()]).unwrap();
    }
    assert!(stale.extend().await.is_err());
    lock.release().await.unwrap();
    let r = recorder();
    assert!(r.counter_sum("redquorum_acquire_total", "result=acquired") >= acquired + 2);
    assert!(r.counter_sum("redquorum_acquire_total", "result=contended") > contended);
    assert!(r.counter_sum("redquorum_extend_total", "result=extended") > extended);
    assert!(r.counter_sum("redquorum_release_total", "result=released") > released);
    assert!(r.counter_sum("redquorum_lease_lost_total", "") > lost);
    assert!(r.histogram_count("redquorum_acquire_seconds") >= 3);
    assert!(r.histogram_count("redquorum_release_validity_seconds") >= 1);
}

/// A recorder that keeps every counter, gauge and histogram in memory, keyed
/// by `name{label=value,...}`. Installed once for this test binary.
#[derive(Debug, Default)]
struct Capture {
    counters: Mutex<HashMap<String, Arc<AtomicU64>>>,
    gauges: Mutex<HashMap<String, Arc<AtomicU64>>>,
    histograms: Mutex<HashMap<String, Arc<Samples>>>,
}

#[derive(Debug, Default)]
struct Samples(Mutex<Vec<f64>>);

impl HistogramFn for Samples {
    fn record(&self, value: f64) {
        self.0.lock().unwrap().push(value);
    }
}

fn recorder() -> &'static Capture {
    static RECORDER: OnceLock<&'static Capture> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let capture: &'static Capture = Box::leak(Box::default());
        metrics::set_global_recorder(capture).expect("the only recorder in this binary");
        capture
    })
}

fn name_of(key: &Key) -> String {
    let mut labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    labels.sort();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Capture {
    fn counter_sum(&self, name: &str, label: &str) -> u64 {
        self.counters
            .lock()
            .unwrap()
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("{name}{{")) && k.contains(label))
            .map(|(_, v)| v.load(Ordering::Relaxed))
            .sum()
    }

    fn gauge(&self, key: &str) -> Option<f64> {
        let gauges = self.gauges.lock().unwrap();
        gauges
            .get(key)
            .map(|g| f64::from_bits(g.load(Ordering::Relaxed)))
    }

    fn histogram_count(&self, name: &str) -> usize {
        let histograms = self.histograms.lock().unwrap();
        histograms
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("{name}{{")))
            .map(|(_, h)| h.0.lock().unwrap().len())
            .sum()
    }

    fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.counters.lock().unwrap().keys().cloned().collect();
        keys.extend(self.gauges.lock().unwrap().keys().cloned());
        keys
    }
}

impl Recorder for Capture {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let mut counters = self.counters.lock().unwrap();
        let counter = counters.entry(name_of(key)).or_default();
        Counter::from_arc(Arc::clone(counter))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let mut gauges = self.gauges.lock().unwrap();
        Gauge::from_arc(Arc::clone(gauges.entry(name_of(key)).or_default()))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let mut histograms = self.histograms.lock().unwrap();
        Histogram::from_arc(Arc::clone(histograms.entry(name_of(key)).or_default()))
    }
}

#[tokio::test]
async fn every_lock_kind_refuses_the_votes_of_fresh_non_durable_nodes() {
    let cluster = cluster(3);
    let redlock = builder(&cluster)
        .max_ttl(Duration::from_secs(600))
        .build()
        .unwrap();
    let refused = |err: &Error| {
        err.outcomes().is_some_and(|o| {
            o.iter()
                .any(|(_, o)| matches!(o, NodeOutcome::Refused(Ineligible::RecentRestart { .. })))
        })
    };
    let err = redlock
        .reentrant_owner()
        .try_lock("kinds")
        .await
        .unwrap_err();
    assert!(refused(&err), "reentrant: {err:?}");
    let err = redlock.try_read_lock("kinds").await.unwrap_err();
    assert!(refused(&err), "read: {err:?}");
    let err = redlock.try_write_lock("kinds").await.unwrap_err();
    assert!(refused(&err), "write: {err:?}");
    let err = redlock
        .try_lock_any(&["kinds-a", "kinds-b"])
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Contended { .. } | Error::Unavailable { .. }),
        "any-of: {err:?}"
    );
}

/// Two URLs naming one server (`localhost` and `127.0.0.1`) must not vote
/// twice: with the third node down, that one server would otherwise grant a
/// "majority" alone. The server is recognised by its run id, and the alias's
/// vote is refused, so nothing is granted.
#[tokio::test]
async fn aliases_of_one_server_vote_once() {
    let nodes = cluster(2);
    let (port, other) = (nodes.port(0), nodes.port(1));
    nodes.kill(1).unwrap();
    let redlock = Redlock::builder()
        .nodes([
            format!("redis://localhost:{port}"),
            format!("redis://127.0.0.1:{port}"),
            format!("redis://127.0.0.1:{other}"),
        ])
        .ttl(Duration::from_secs(5))
        .node_timeout(Duration::from_millis(250))
        .build()
        .unwrap();
    let attempt = redlock.try_lock("aliased").await;
    let Err(Error::Unavailable { outcomes, .. }) = &attempt else {
        panic!("one server with two names granted, or failed otherwise: {attempt:?}")
    };
    let refused = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, NodeOutcome::Refused(Ineligible::SameServer { .. })))
        .count();
    assert_eq!(refused, 1, "{outcomes}: {outcomes:?}");
    let key = redlock.key("aliased");
    assert_eq!(
        nodes.command(0, &["EXISTS", &key]).unwrap().as_int(),
        Some(0)
    );
}
