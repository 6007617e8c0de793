//! Shared helpers: real clusters, raw key reads on every node, bounded waits.
#![allow(dead_code, unreachable_pub)]

use std::future::Future;
use std::time::{Duration, Instant};

use redquorum::{Lock, Redlock};
use redquorum_harness::Cluster;

/// Starts `n` local nodes; panics with the harness's message if it cannot.
pub fn cluster(n: usize) -> Cluster {
    Cluster::start(n).unwrap_or_else(|e| panic!("cannot start {n} redis nodes: {e}"))
}

/// A Redlock on every node of `cluster` with the given TTL and a 250 ms node
/// timeout (roomy: a loaded CI machine must not turn slow answers into failures;
/// tests about timeouts set their own).
pub fn redlock(cluster: &Cluster, ttl: Duration) -> Redlock {
    Redlock::builder()
        .nodes(cluster.urls())
        .ttl(ttl)
        .node_timeout(Duration::from_millis(250))
        .retry_delay(Duration::from_millis(5))
        .retry_jitter(Duration::from_millis(20))
        .build()
        .expect("valid configuration")
}

/// The value of `key` on every node (`None`: absent or node unreachable).
pub fn values(cluster: &Cluster, key: &str) -> Vec<Option<String>> {
    (0..cluster.len())
        .map(|i| {
            cluster
                .command(i, &["GET", key])
                .ok()
                .and_then(|r| r.as_text())
        })
        .collect()
}

/// On how many nodes `key` holds `owner`.
pub fn held_on(cluster: &Cluster, key: &str, owner: &str) -> usize {
    values(cluster, key)
        .iter()
        .filter(|v| v.as_deref() == Some(owner))
        .count()
}

/// Asserts `lock`'s key holds its owner token on exactly `expected` nodes,
/// waiting up to 2 s: a quorum can be decided before the last node answered,
/// and that node's acquire (already sent) lands moments later.
pub async fn assert_held_on(cluster: &Cluster, lock: &Lock, expected: usize) {
    let owner = lock.owner().to_string();
    let reached = eventually(Duration::from_secs(2), || async {
        held_on(cluster, lock.key(), &owner) == expected
    })
    .await;
    assert!(
        reached,
        "lock {:?} held on {} nodes, expected {expected}; values: {:?}",
        lock.resource(),
        held_on(cluster, lock.key(), &owner),
        values(cluster, lock.key())
    );
}

/// The PTTL of `key` on node `index` in ms (negative: no key / no expiry).
pub fn pttl(cluster: &Cluster, index: usize, key: &str) -> i64 {
    cluster
        .command(index, &["PTTL", key])
        .ok()
        .and_then(|r| r.as_int())
        .unwrap_or(-2)
}

/// Asserts that no two holds that `conflict` overlap in time; each hold is
/// `(from, to, what)` on one clock. Reports the first overlapping pair.
pub fn assert_no_conflicting_overlap<T: std::fmt::Debug>(
    holds: &[(Instant, Instant, T)],
    conflict: impl Fn(&T, &T) -> bool,
) {
    for (i, a) in holds.iter().enumerate() {
        for b in &holds[i + 1..] {
            let overlap = a.0 < b.1 && b.0 < a.1;
            assert!(
                !(overlap && conflict(&a.2, &b.2)),
                "conflicting holds overlapped: {a:?} and {b:?}"
            );
        }
    }
}

/// Polls `condition` every 10 ms until it holds or `within` passes; returns whether it held.
pub async fn eventually<F, Fut>(within: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `calls=` of `cmdstat_<name>` on node `i` (0 when never called). Commands
/// run inside scripts count too (`set`, `del`).
pub fn calls(cluster: &Cluster, i: usize, name: &str) -> u64 {
    let info = cluster
        .command(i, &["INFO", "commandstats"])
        .ok()
        .and_then(|r| r.as_text())
        .unwrap_or_default();
    let prefix = format!("cmdstat_{name}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Takes and releases one lock, so every node is connected and has the
/// scripts before a test counts calls or pauses nodes.
pub async fn warm_up(redlock: &Redlock) {
    redlock
        .try_lock("warm-up")
        .await
        .expect("warm-up lock")
        .release()
        .await
        .expect("warm-up release");
}
