//! The library warns about a node's dangerous setting once, not at every
//! health probe: a node whose `maxmemory-policy` may evict lock keys is
//! probed many times and named in exactly one warning; changing the policy
//! (a new setting) warns again, once.
//!
//! A node that refuses subscriptions (an ACL user without channel
//! permissions) is named once too, however many waiters try it.
//!
//! The tests of this binary share the process-wide `tracing` subscriber.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::acl::{LOCKER_COMMANDS, create_user};
use common::{builder, calls, cluster, eventually};
use redquorum::Redlock;
use redquorum_harness::Cluster;

const WARNING: &str = "maxmemory-policy may evict lock keys";
const REFUSES: &str = "refuses the release channels";

/// Everything the subscriber writes, shared with the test.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The warning lines about `node` so far.
    fn warnings_about(&self, node: &str) -> Vec<String> {
        self.lines_with(WARNING, node)
    }

    /// The lines so far that say `what` about `node`.
    fn lines_with(&self, what: &str, node: &str) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains(what) && l.contains(node))
            .map(str::to_owned)
            .collect()
    }
}

/// How many subscriptions node `index`'s ACL log counts as denied (the
/// command, or the channel).
fn channel_denials(cluster: &Cluster, index: usize) -> i64 {
    let log = cluster.acl_denials(index).unwrap_or_default();
    log.iter()
        .filter(|d| d.reason == "channel" || d.object == "subscribe")
        .map(|d| d.count)
        .sum()
}

/// The process-wide subscriber's output, warnings and up.
fn captured() -> Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED
        .get_or_init(|| {
            let captured = Captured::default();
            let writer = captured.clone();
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::WARN)
                .with_writer(move || writer.clone())
                .init();
            captured
        })
        .clone()
}

/// How many health probes the node has answered (each sends `CONFIG GET`;
/// the test itself only sends `INFO`).
fn probes(cluster: &Cluster, index: usize) -> u64 {
    calls(cluster, index, "config|get")
}

#[tokio::test]
async fn an_evicting_node_is_warned_about_once_not_at_every_probe() {
    let captured = captured();
    let cluster = cluster(3);
    cluster
        .command(1, &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"])
        .unwrap();
    let node = cluster.host_port(1);
    let _redlock = Redlock::builder()
        .nodes(cluster.urls())
        .health_check_interval(Duration::from_millis(50))
        .build()
        .unwrap();

    let probed = |n: u64| {
        let cluster = &cluster;
        move || async move { probes(cluster, 1) >= n }
    };
    assert!(
        eventually(Duration::from_secs(10), probed(8)).await,
        "fewer than 8 probes in 10 s: {}",
        probes(&cluster, 1)
    );
    let warnings = captured.warnings_about(&node);
    assert_eq!(warnings.len(), 1, "after 8 probes: {warnings:#?}");

    // A new setting is news: one more warning, then quiet again.
    cluster
        .command(1, &["CONFIG", "SET", "maxmemory-policy", "volatile-ttl"])
        .unwrap();
    let seen = probes(&cluster, 1);
    assert!(
        eventually(Duration::from_secs(10), probed(seen + 8)).await,
        "the probes stopped"
    );
    let warnings = captured.warnings_about(&node);
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(warnings[1].contains("volatile-ttl"), "{warnings:#?}");
}

/// An ACL user without channel permissions (the Redis 7 default) cannot
/// subscribe: waiters then retry by their backoff and a watchdog hears of
/// a loss only at its next extension. The library says so once per node,
/// not at each of the waiters that try, and names no node that allows it.
#[tokio::test]
async fn a_node_refusing_subscriptions_is_warned_about_once() {
    let captured = captured();
    let cluster = cluster(3);
    create_user(&cluster, "quiet", "pw-Qz8", LOCKER_COMMANDS);
    // Node 0 allows the release channels (docs/operations.md, ACL user).
    let channels = [
        "ACL",
        "SETUSER",
        "quiet",
        "+subscribe",
        "+unsubscribe",
        "+publish",
    ];
    cluster
        .command(0, &[&channels[..], &["&redquorum:released:*"]].concat())
        .unwrap();
    let redlock = builder(cluster.urls_as("quiet", "pw-Qz8")).build().unwrap();
    // Three holders listening for asks, each on a name of its own: three
    // subscriptions on every node (sent at the listener's first poll).
    for (round, name) in ["quiet-a", "quiet-b", "quiet-c"].into_iter().enumerate() {
        let held = redlock.lock(name).await.expect("lock");
        let listening = tokio::time::timeout(Duration::from_millis(100), held.release_asked());
        assert!(listening.await.is_err(), "nobody asked");
        if round == 0 {
            // The first listener started the probes: node 0 took its
            // PUBLISH (nothing else publishes before the first release),
            // and the refusing nodes were named.
            let probed = || {
                let (cluster, captured) = (&cluster, &captured);
                move || async move {
                    calls(cluster, 0, "publish") >= 1
                        && (1..3).all(|i| {
                            !(captured.lines_with(REFUSES, &cluster.host_port(i))).is_empty()
                        })
                }
            };
            assert!(
                eventually(Duration::from_secs(10), probed()).await,
                "the probes did not finish"
            );
        }
        held.release().await.expect("release");
    }
    // The refusing nodes refused all three (their ACL logs count them).
    let refused_all = || {
        let cluster = &cluster;
        move || async move { (1..3).all(|i| channel_denials(cluster, i) >= 3) }
    };
    assert!(
        eventually(Duration::from_secs(10), refused_all()).await,
        "denials: {}, {}",
        channel_denials(&cluster, 1),
        channel_denials(&cluster, 2)
    );
    for refusing in [1, 2] {
        let node = cluster.host_port(refusing);
        let said = captured.lines_with(REFUSES, &node);
        assert_eq!(said.len(), 1, "node {node}: {said:#?}");
    }
    let allowing = cluster.host_port(0);
    assert!(
        captured.lines_with(REFUSES, &allowing).is_empty(),
        "{allowing} allows the channels: {:?}",
        captured.lines_with(REFUSES, &allowing)
    );
}
