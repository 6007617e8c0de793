//! The leak check after a run: lock keys still on a node once every fault
//! is healed and the largest TTL has passed.

use std::fmt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::audit::LockKeys;
use crate::error::HarnessError;
use crate::nodes::{Cluster, ShardedCluster};

/// A lock key found on a node after the run plus the max TTL.
///
/// # Examples
///
/// ```
/// let leak = redquorum_harness::LeakedKey { node: "127.0.0.1:7001".into(), key: "lock:a".into(), pttl_ms: 900 };
/// assert!(leak.to_string().contains("lock:a"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeakedKey {
    /// The node, `host:port` (a cluster master: its URL).
    pub node: String,
    /// The key.
    pub key: String,
    /// Its PTTL when found, in ms (−1: no expiry at all).
    pub pttl_ms: i64,
}

impl fmt::Display for LeakedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on {} (pttl {} ms)",
            self.key, self.node, self.pttl_ms
        )
    }
}

/// Lock keys matching `pattern` still on any node, as leaks. Call it after the
/// run, every fault healed, and the max TTL waited out.
///
/// # Errors
///
/// A node that cannot be read.
///
/// # Examples
///
/// ```
/// let cluster = redquorum_harness::Cluster::start(1).unwrap();
/// cluster.command(0, &["SET", "lock:x", "o", "PX", "60000"]).unwrap();
/// let leaks = redquorum_harness::find_leaks(&cluster, "lock:*").unwrap();
/// assert_eq!(leaks.len(), 1);
/// ```
pub fn find_leaks(cluster: &Cluster, pattern: &str) -> Result<Vec<LeakedKey>, HarnessError> {
    let mut leaks = Vec::new();
    for index in 0..cluster.len() {
        for (key, pttl_ms) in cluster.keys(index, pattern)? {
            leaks.push(LeakedKey {
                node: cluster.host_port(index),
                key,
                pttl_ms,
            });
        }
    }
    Ok(leaks)
}

/// Lock keys matching `pattern` (fence counters, `*:fence`, excepted: they
/// outlive locks on purpose) that are still on a node after `within`.
///
/// Polls instead of sleeping a fixed time: it returns as soon as no lock key
/// is left, and a key still there at the deadline (no expiry, or set late
/// with a long one) is reported. Call it after the run with every fault
/// healed, with `within` a little above the largest TTL. Blocks the thread.
///
/// # Errors
///
/// A node that cannot be read.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let cluster = redquorum_harness::Cluster::start(1).unwrap();
/// cluster.command(0, &["SET", "lock:short", "o", "PX", "100"]).unwrap();
/// cluster.command(0, &["SET", "lock:forever", "o"]).unwrap();
/// let leaks = redquorum_harness::leaks_after(&cluster, "lock:*", Duration::from_secs(1)).unwrap();
/// assert_eq!(leaks.len(), 1);
/// assert_eq!(leaks[0].key, "lock:forever");
/// ```
pub fn leaks_after(
    cluster: &Cluster,
    pattern: &str,
    within: Duration,
) -> Result<Vec<LeakedKey>, HarnessError> {
    let keys = LockKeys {
        pattern: pattern.to_owned(),
        ..LockKeys::default()
    };
    lock_keys_after(cluster, &keys, within)
}

/// As [`leaks_after`], for lock keys in any layout.
///
/// # Errors
///
/// A node that cannot be read.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let cluster = redquorum_harness::Cluster::start(1).unwrap();
/// cluster.command(0, &["SET", "app:{r}:fence", "7"]).unwrap();
/// let keys = redquorum_harness::LockKeys::prefixed("app:");
/// assert!(redquorum_harness::lock_keys_after(&cluster, &keys, Duration::ZERO).unwrap().is_empty());
/// ```
pub fn lock_keys_after(
    cluster: &Cluster,
    keys: &LockKeys,
    within: Duration,
) -> Result<Vec<LeakedKey>, HarnessError> {
    poll(keys, within, || find_leaks(cluster, &keys.pattern))
}

/// As [`lock_keys_after`], on cluster masters: every running shard primary
/// of each is read (a leak's node is its master's URL).
pub(crate) fn sharded_lock_keys_after(
    sharded: &ShardedCluster,
    keys: &LockKeys,
    within: Duration,
) -> Result<Vec<LeakedKey>, HarnessError> {
    poll(keys, within, || {
        let mut leaks = Vec::new();
        for master in 0..sharded.len() {
            for (key, pttl_ms) in sharded.keys(master, &keys.pattern)? {
                leaks.push(LeakedKey {
                    node: sharded.url(master),
                    key,
                    pttl_ms,
                });
            }
        }
        Ok(leaks)
    })
}

/// `find`'s lock keys, again every 50 ms until there are none or `within` has passed.
fn poll(
    keys: &LockKeys,
    within: Duration,
    find: impl Fn() -> Result<Vec<LeakedKey>, HarnessError>,
) -> Result<Vec<LeakedKey>, HarnessError> {
    let deadline = Instant::now() + within;
    loop {
        let leaks: Vec<LeakedKey> = find()?
            .into_iter()
            .filter(|leak| keys.is_lock_key(&leak.key))
            .collect();
        if leaks.is_empty() || Instant::now() >= deadline {
            return Ok(leaks);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
