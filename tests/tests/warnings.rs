//! The library warns about a node's dangerous setting once, not at every
//! health probe: a node whose `maxmemory-policy` may evict lock keys is
//! probed many times and named in exactly one warning; changing the policy
//! (a new setting) warns again, once.
//!
//! One test in this binary: it installs the process-wide `tracing` subscriber.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{cluster, eventually};
use redquorum::Redlock;
use redquorum_harness::Cluster;

const WARNING: &str = "maxmemory-policy may evict lock keys";

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
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains(WARNING) && l.contains(node))
            .map(str::to_owned)
            .collect()
    }
}

/// How many health probes the node has answered (each sends `CONFIG GET`;
/// the test itself only sends `INFO`).
fn probes(cluster: &Cluster, index: usize) -> u64 {
    let stats = cluster
        .command(index, &["INFO", "commandstats"])
        .unwrap()
        .as_text()
        .unwrap_or_default();
    stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_config|get:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn an_evicting_node_is_warned_about_once_not_at_every_probe() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .init();
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
