//! Shared helpers: real clusters, raw key reads on every node, bounded waits.
#![allow(dead_code, unreachable_pub)]

pub mod acl;
pub mod channels;

use std::future::Future;
use std::time::{Duration, Instant};

use redquorum::{Lock, Redlock, RedlockBuilder};
use redquorum_harness::{Cluster, Reply};

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

/// A builder on `urls` (any scheme, credentials in them) with a 5 s TTL, a
/// 300 ms node timeout and a 500 ms wait: the ACL and TLS tests.
pub fn builder(urls: Vec<String>) -> RedlockBuilder {
    Redlock::builder()
        .nodes(urls)
        .ttl(Duration::from_secs(5))
        .node_timeout(Duration::from_millis(300))
        .wait(Duration::from_millis(500))
}

/// A resource's lock record on one node (`protocol/scripts/ops/`): a
/// plain hold's string (its token; its expiry the key's), or a hash of
/// every other kind (`kind`, and `h:<token>` = expiry in node ms per hold).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// No key (or the node is unreachable).
    Absent,
    /// A plain hold: its token and ms left.
    Plain { token: String, left_ms: i64 },
    /// A lock record's fields and values, in pairs.
    Hash(Vec<(String, String)>),
}

impl Record {
    /// The record as `field=value` pairs for messages (a plain hold as
    /// `plain=<token>`); `None` when absent.
    pub fn text(&self) -> Option<String> {
        match self {
            Record::Absent => None,
            Record::Plain { token, .. } => Some(format!("plain={token}")),
            Record::Hash(pairs) => Some(
                pairs
                    .iter()
                    .map(|(f, v)| format!("{f}={v}"))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        }
    }

    /// The live holds' tokens, given node `now` (ms).
    pub fn live_tokens(&self, now: i64) -> Vec<String> {
        match self {
            Record::Absent => Vec::new(),
            Record::Plain { token, left_ms } => {
                (*left_ms > 0).then(|| token.clone()).into_iter().collect()
            }
            Record::Hash(pairs) => pairs
                .iter()
                .filter_map(|(f, v)| Some((f.strip_prefix("h:")?, v.parse::<i64>().ok()?)))
                .filter(|(_, expiry)| *expiry > now)
                .map(|(token, _)| token.to_owned())
                .collect(),
        }
    }
}

/// The lock record at `key` on node `index`.
pub fn record(cluster: &Cluster, index: usize, key: &str) -> Record {
    let kind = cluster
        .command(index, &["TYPE", key])
        .ok()
        .and_then(|r| r.as_text());
    match kind.as_deref() {
        Some("string") => {
            let token = cluster
                .command(index, &["GET", key])
                .ok()
                .and_then(|r| r.as_text());
            match token {
                Some(token) => Record::Plain {
                    token,
                    left_ms: pttl(cluster, index, key),
                },
                None => Record::Absent,
            }
        }
        Some("hash") => {
            let Ok(Reply::Array(Some(items))) = cluster.command(index, &["HGETALL", key]) else {
                return Record::Absent;
            };
            let texts: Vec<String> = items.iter().filter_map(Reply::as_text).collect();
            Record::Hash(
                texts
                    .chunks(2)
                    .map(|pair| (pair[0].clone(), pair.get(1).cloned().unwrap_or_default()))
                    .collect(),
            )
        }
        _ => Record::Absent,
    }
}

/// The lock record at `key` on every node, as `field=value` pairs for
/// messages (`None`: absent or node unreachable; see [`Record::text`]).
pub fn values(cluster: &Cluster, key: &str) -> Vec<Option<String>> {
    (0..cluster.len())
        .map(|i| record(cluster, i, key).text())
        .collect()
}

/// The string at `key` on every node (`None`: absent or unreachable), e.g.
/// a fence counter.
pub fn strings(cluster: &Cluster, key: &str) -> Vec<Option<String>> {
    (0..cluster.len())
        .map(|i| {
            cluster
                .command(i, &["GET", key])
                .ok()
                .and_then(|r| r.as_text())
        })
        .collect()
}

/// Node `index`'s clock in ms (`TIME`).
pub fn node_ms(cluster: &Cluster, index: usize) -> Option<i64> {
    let Ok(Reply::Array(Some(parts))) = cluster.command(index, &["TIME"]) else {
        return None;
    };
    let secs: i64 = parts.first()?.as_text()?.parse().ok()?;
    let micros: i64 = parts.get(1)?.as_text()?.parse().ok()?;
    Some(secs * 1000 + micros / 1000)
}

/// Whether node `index` has a live hold of `owner` in the lock at `key`.
pub fn holds(cluster: &Cluster, index: usize, key: &str, owner: &str) -> bool {
    let Some(now) = node_ms(cluster, index) else {
        return false;
    };
    record(cluster, index, key)
        .live_tokens(now)
        .iter()
        .any(|token| token == owner)
}

/// On how many nodes `owner` holds the lock at `key`.
pub fn held_on(cluster: &Cluster, key: &str, owner: &str) -> usize {
    (0..cluster.len())
        .filter(|&i| holds(cluster, i, key, owner))
        .count()
}

/// The number of live holds in the lock at `key` on each node.
pub fn hold_counts(cluster: &Cluster, key: &str) -> Vec<usize> {
    (0..cluster.len())
        .map(|i| {
            let now = node_ms(cluster, i).unwrap_or(i64::MAX);
            record(cluster, i, key).live_tokens(now).len()
        })
        .collect()
}

/// The lock kind recorded at `key` on each node (`None`: free); a plain
/// hold's string record is a `lock`.
pub fn kinds(cluster: &Cluster, key: &str) -> Vec<Option<String>> {
    (0..cluster.len())
        .map(|i| match record(cluster, i, key) {
            Record::Absent => None,
            Record::Plain { .. } => Some("lock".to_owned()),
            Record::Hash(pairs) => pairs
                .into_iter()
                .find(|(field, _)| field == "kind")
                .map(|(_, kind)| kind),
        })
        .collect()
}

/// Makes `owner` (another client's token) hold the plain lock at `key` on
/// node `index` for `ttl`, as the lock script would have.
pub fn plant_holder(cluster: &Cluster, index: usize, key: &str, owner: &str, ttl: Duration) {
    let now = node_ms(cluster, index).expect("node time");
    let expiry = (now + ttl.as_millis() as i64).to_string();
    let field = format!("h:{owner}");
    cluster
        .command(index, &["HSET", key, "kind", "lock", &field, &expiry])
        .expect("HSET");
    cluster
        .command(index, &["PEXPIRE", key, &ttl.as_millis().to_string()])
        .expect("PEXPIRE");
}

/// Asserts `lock` holds on exactly `expected` nodes, waiting up to 2 s: a
/// quorum can be decided before the last node answered, and that node's
/// acquire (already sent) lands moments later.
pub async fn assert_held_on(cluster: &Cluster, lock: &Lock, expected: usize) {
    let owner = lock.owner().to_string();
    let reached = eventually(LANDS_WITHIN, || async {
        held_on(cluster, lock.key(), &owner) == expected
    })
    .await;
    assert!(
        reached,
        "lock {:?} held on {} nodes, expected {expected}; records: {:?}",
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

/// How long the tests wait for something already sent to land on every
/// node: a straggler's acquire after the quorum decided, a background
/// release, a watchdog's extension. A few milliseconds on an idle machine;
/// seconds when the whole suite runs on two busy cores. A wait bounded by it
/// returns as soon as the thing happened: it costs only a failing test.
pub const LANDS_WITHIN: Duration = Duration::from_secs(8);

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

/// Waits (bounded) until `probe` holds: for raw key reads just after a
/// release, which returns once a quorum confirmed it (the other nodes'
/// releases complete right after). Panics with `what` and the last reading.
pub async fn settles<T: PartialEq + std::fmt::Debug>(
    what: &str,
    expected: T,
    mut probe: impl FnMut() -> T,
) {
    let settled = eventually(Duration::from_secs(5), || {
        let now = probe();
        let ok = now == expected;
        async move { ok }
    })
    .await;
    if !settled {
        assert_eq!(probe(), expected, "{what}");
    }
}

/// Waits until a majority of the nodes have a subscriber on the channel of
/// the line `line` (`redquorum:released:<line>`; a lock key, or one with
/// `:lost`, `:ask`, `:news`).
pub async fn subscribed(cluster: &Cluster, line: &str) {
    let on = || {
        (0..cluster.len())
            .filter(|&i| subscribers(cluster, i, line) >= 1)
            .count()
    };
    let reached = eventually(LANDS_WITHIN, || async { on() > cluster.len() / 2 }).await;
    assert!(reached, "no majority subscribed to {line}'s channel");
}

/// Subscribers of the release channel of `key` (`redquorum:released:<key>`)
/// on node `i`; -1 if it could not be read. An election's news channel is
/// that of `<key>:news`.
pub fn subscribers(cluster: &Cluster, i: usize, key: &str) -> i64 {
    let channel = format!("redquorum:released:{key}");
    match cluster.command(i, &["PUBSUB", "NUMSUB", &channel]) {
        Ok(Reply::Array(Some(items))) => items.get(1).and_then(Reply::as_int).unwrap_or(-1),
        _ => -1,
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
/// scripts before a test counts calls or pauses nodes; then waits for every
/// node's answers, so no call of ours is still in flight (the acquire and
/// release return at a quorum, and a straggler's call that a test's fault
/// then slows would keep its slot busy).
pub async fn warm_up(redlock: &Redlock) {
    redlock
        .try_lock("warm-up")
        .await
        .expect("warm-up lock")
        .release()
        .await
        .expect("warm-up release");
    // Every node answers an inspection, each after the calls sent before it.
    let inspection = redlock.inspect("warm-up").await.expect("warm-up read");
    for (node, view) in inspection.nodes() {
        view.unwrap_or_else(|e| panic!("warm-up read of {node}: {e}"));
    }
}

/// Waits until the client is connected to every node again (after restarts):
/// a probe lock must land on all of them, and its release too. (A release
/// returns at quorum: a snapshot taken while the last node's is on its way
/// would keep the probe's hold, and a restart from it would block the next
/// probe for a whole TTL.)
pub async fn wait_connected(redlock: &Redlock, cluster: &Cluster) {
    let reached = eventually(Duration::from_secs(10), || async {
        let Ok(lock) = redlock.try_lock("probe").await else {
            return false;
        };
        let (key, owner) = (lock.key().to_owned(), lock.owner().to_string());
        // A straggler's acquire lands moments after the quorum was decided.
        let everywhere = eventually(Duration::from_millis(500), || async {
            held_on(cluster, &key, &owner) == cluster.len()
        })
        .await;
        let _ = lock.release().await;
        let released = eventually(Duration::from_millis(500), || async {
            held_on(cluster, &key, &owner) == 0
        })
        .await;
        everywhere && released
    })
    .await;
    assert!(reached, "the client did not reconnect to every node");
}
