//! The key audit: a thread that reads every node's lock keys directly
//! (not through the fault proxies) every few tens of milliseconds during a
//! run, and remembers each (node, key, owner) it saw with how old the key
//! was. The checker then finds keys that lived on after their owner's
//! attempt was unwound or its lease released: a missing unwind, a release
//! that did not check the owner, or a late acquire landing after its unwind
//! all show here, long before the key's TTL would hide them. Once it
//! remembers a key, it follows it at every age: the first read of its node
//! that no longer shows it ends that life (`gone`), and a later sighting of
//! the same owner's hold on that node starts another (`back_after`), so the
//! checker can also find a live hold removed by someone else, or a hold
//! that came back after it had gone.
//!
//! The key layout is the library's business: the audit takes the pattern of
//! lock keys and the suffix of keys to skip (fence counters). It reads the
//! library's lock record, one hash per resource name at
//! `<prefix>{<escaped name>}` whose `h:<token>` fields are the live holds and
//! their expiries (the fence counter is at `<prefix>{<escaped name>}:fence`),
//! and, for tests that plant keys by hand, a string key's value as its owner.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::micros;
use crate::nodes::Cluster;
use crate::nodes::{Reply, RespConn};

/// Which keys on the nodes are lock keys.
///
/// # Examples
///
/// ```
/// let keys = redquorum_harness::LockKeys::prefixed("app:");
/// assert_eq!(keys.pattern, "app:*");
/// assert!(keys.is_lock_key("app:{r}") && !keys.is_lock_key("app:{r}:fence"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockKeys {
    /// A SCAN MATCH pattern for the lock keys. Default: `lock:*`.
    pub pattern: String,
    /// Keys matching the pattern but ending so are not lock keys (fence
    /// counters outlive locks on purpose). Default: `:fence`.
    pub exclude_suffix: String,
}

impl Default for LockKeys {
    fn default() -> Self {
        Self::prefixed("lock:")
    }
}

impl LockKeys {
    /// Every key starting with `prefix`, fence counters excepted.
    ///
    /// # Examples
    ///
    /// See [`LockKeys`].
    #[must_use]
    pub fn prefixed(prefix: &str) -> Self {
        Self {
            pattern: format!("{prefix}*"),
            exclude_suffix: ":fence".into(),
        }
    }

    /// True unless `key` ends with the excluded suffix.
    ///
    /// # Examples
    ///
    /// See [`LockKeys`].
    #[must_use]
    pub fn is_lock_key(&self, key: &str) -> bool {
        self.exclude_suffix.is_empty() || !key.ends_with(&self.exclude_suffix)
    }
}

/// One (node, key, owner) the audit saw, first and last.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let life = redquorum_harness::KeyLife {
///     node: 1, key: "lock:r".into(), owner: "ab".into(),
///     first_seen: Duration::from_millis(10), last_seen: Duration::from_millis(900),
///     age: Duration::from_millis(1500),
///     gone: None, back_after: None,
/// };
/// assert!(life.to_string().contains("lock:r"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyLife {
    /// The node's index.
    pub node: usize,
    /// The key.
    pub key: String,
    /// The owner token it held.
    pub owner: String,
    /// When first seen (history clock).
    #[serde(with = "micros")]
    pub first_seen: Duration,
    /// When last seen.
    #[serde(with = "micros")]
    pub last_seen: Duration,
    /// How long ago, at `last_seen`, its expiry was last set: the TTL minus its PTTL.
    #[serde(with = "micros")]
    pub age: Duration,
    /// The first read of its node after `last_seen` that did not show it
    /// (the hold was gone by then); `None`: seen until the audit stopped or
    /// its node was not read again.
    #[serde(
        with = "micros::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub gone: Option<Duration>,
    /// For a hold seen again on its node after an earlier life of it there
    /// had gone: the last read of the node before `first_seen`, which did
    /// not show it (the hold came back after that); `None` for a first life.
    #[serde(
        with = "micros::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub back_after: Option<Duration>,
}

impl fmt::Display for KeyLife {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "{} owner {} on node {}: seen {:.1}..{:.1} ms, set {:.1} ms before the last sighting",
            self.key,
            self.owner,
            self.node,
            ms(self.first_seen),
            ms(self.last_seen),
            ms(self.age)
        )?;
        if let Some(back_after) = self.back_after {
            write!(
                f,
                ", back after a read at {:.1} ms missed it",
                ms(back_after)
            )?;
        }
        if let Some(gone) = self.gone {
            write!(f, ", gone by {:.1} ms", ms(gone))?;
        }
        Ok(())
    }
}

/// What the audit reads and how often.
///
/// # Examples
///
/// ```
/// let config = redquorum_harness::AuditConfig::new(std::time::Duration::from_secs(2));
/// assert_eq!(config.every, std::time::Duration::from_millis(50));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuditConfig {
    /// The lock keys. Default: [`LockKeys::default`].
    pub keys: LockKeys,
    /// The lock TTL (a key's age is the TTL minus its PTTL).
    pub ttl: Duration,
    /// Keys younger than this are not remembered (they are normal). Default: ttl / 4.
    pub min_age: Duration,
    /// Time between two reads of every node. Default: 50 ms.
    pub every: Duration,
    /// The history's epoch. Default: when the config was made.
    pub epoch: Instant,
}

impl AuditConfig {
    /// Defaults for a lock of `ttl`.
    ///
    /// # Examples
    ///
    /// See [`AuditConfig`].
    #[must_use]
    pub fn new(ttl: Duration) -> Self {
        Self {
            keys: LockKeys::default(),
            ttl,
            min_age: ttl / 4,
            every: Duration::from_millis(50),
            epoch: Instant::now(),
        }
    }
}

/// Reads `(key, owner, pttl)` triples of the matching lock keys. A string
/// key's owner is its value. A hash is a lock record in the library's layout
/// (`protocol/keys.rs`, `protocol/scripts/ops.lua`): one triple per live hold, a field
/// `h:<token>` whose value is the hold's expiry in node time, so its "pttl"
/// is that expiry less the node's clock (every kind: plain, reentrant, read,
/// write; a writer's `intent` is not a hold and is skipped).
const AUDIT_LUA: &str = include_str!("audit.lua");

/// A running audit; [`stop`](Self::stop) returns what it saw.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use redquorum_harness::{AuditConfig, Cluster, KeyAudit};
///
/// let cluster = Arc::new(Cluster::start(1).unwrap());
/// let config = AuditConfig::new(Duration::from_secs(2));
/// cluster.command(0, &["SET", "lock:r", "owner", "PX", "1000"]).unwrap(); // 1 s old at once
/// let audit = KeyAudit::start(cluster.clone(), config);
/// assert!(audit.wait_rounds(2, Duration::from_secs(5)));
/// let seen = audit.stop();
/// assert_eq!(seen[0].owner, "owner");
/// assert!(seen[0].age >= Duration::from_millis(1000));
/// ```
#[derive(Debug)]
pub struct KeyAudit {
    stop: Arc<AtomicBool>,
    rounds: Arc<AtomicU64>,
    thread: Option<JoinHandle<Vec<KeyLife>>>,
}

impl KeyAudit {
    /// Starts reading `cluster`'s nodes.
    ///
    /// # Examples
    ///
    /// See [`KeyAudit`].
    #[must_use]
    pub fn start(cluster: Arc<Cluster>, config: AuditConfig) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicU64::new(0));
        let (flag, count) = (stop.clone(), rounds.clone());
        let thread = std::thread::Builder::new()
            .name("key-audit".into())
            .spawn(move || run(&cluster, &config, &flag, &count))
            .ok();
        Self {
            stop,
            rounds,
            thread,
        }
    }

    /// Waits (blocking, at most `timeout`) until `rounds` more reads of
    /// every node have finished; false on timeout.
    ///
    /// # Examples
    ///
    /// See [`KeyAudit`].
    #[must_use]
    pub fn wait_rounds(&self, rounds: u64, timeout: Duration) -> bool {
        let target = self.rounds.load(Ordering::SeqCst) + rounds;
        let deadline = Instant::now() + timeout;
        while self.rounds.load(Ordering::SeqCst) < target {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// Stops and returns every key seen older than the minimum age.
    ///
    /// # Examples
    ///
    /// See [`KeyAudit`].
    #[must_use]
    pub fn stop(mut self) -> Vec<KeyLife> {
        self.finish()
    }

    fn finish(&mut self) -> Vec<KeyLife> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for KeyAudit {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

fn run(
    cluster: &Cluster,
    config: &AuditConfig,
    stop: &AtomicBool,
    rounds: &AtomicU64,
) -> Vec<KeyLife> {
    let mut conns: Vec<Option<RespConn>> = (0..cluster.len()).map(|_| None).collect();
    // Every life of every remembered (node, key, owner), the last one open
    // until a read of its node no longer shows it.
    let mut seen: HashMap<(usize, String, String), Vec<KeyLife>> = HashMap::new();
    // Per node: the remembered holds still open, and its last good read.
    let mut open: Vec<HashSet<(String, String)>> = vec![HashSet::new(); cluster.len()];
    let mut last_read: Vec<Option<Duration>> = vec![None; cluster.len()];
    let timeout = Duration::from_millis(100);
    while !stop.load(Ordering::SeqCst) {
        for (node, slot) in conns.iter_mut().enumerate() {
            if slot.is_none() {
                // A paused or killed node: try again next round.
                *slot = RespConn::connect_addr(&cluster.host_port(node), timeout).ok();
            }
            let Some(conn) = slot.as_mut() else { continue };
            let reply = conn.command(&[
                "EVAL",
                AUDIT_LUA,
                "0",
                &config.keys.pattern,
                &config.keys.exclude_suffix,
            ]);
            let at = config.epoch.elapsed();
            let Ok(Reply::Array(Some(items))) = reply else {
                *slot = None;
                continue;
            };
            let mut present = HashSet::new();
            for triple in items.chunks_exact(3) {
                let (Some(key), Some(owner), Some(pttl)) =
                    (triple[0].as_text(), triple[1].as_text(), triple[2].as_int())
                else {
                    continue;
                };
                // A key without expiry (PTTL -1) is there, of no known age.
                let age = u64::try_from(pttl)
                    .ok()
                    .map(|pttl| config.ttl.saturating_sub(Duration::from_millis(pttl)));
                let hold = (node, key, owner);
                present.insert((hold.1.clone(), hold.2.clone()));
                if let Some(lives) = seen.get_mut(&hold) {
                    let last = lives.last_mut().expect("a remembered hold has a life");
                    if last.gone.is_none() {
                        last.last_seen = at;
                        last.age = age.unwrap_or(last.age);
                    } else {
                        // Back after it had gone: the previous read of this
                        // node did not show it (else it would be open).
                        lives.push(KeyLife {
                            node,
                            key: hold.1.clone(),
                            owner: hold.2.clone(),
                            first_seen: at,
                            last_seen: at,
                            age: age.unwrap_or_default(),
                            gone: None,
                            back_after: last_read[node],
                        });
                        open[node].insert((hold.1, hold.2));
                    }
                    continue;
                }
                let Some(age) = age.filter(|age| *age >= config.min_age) else {
                    continue;
                };
                open[node].insert((hold.1.clone(), hold.2.clone()));
                seen.insert(
                    hold.clone(),
                    vec![KeyLife {
                        node,
                        key: hold.1,
                        owner: hold.2,
                        first_seen: at,
                        last_seen: at,
                        age,
                        gone: None,
                        back_after: None,
                    }],
                );
            }
            let ended: Vec<(String, String)> = open[node].difference(&present).cloned().collect();
            for (key, owner) in ended {
                open[node].remove(&(key.clone(), owner.clone()));
                if let Some(life) = seen
                    .get_mut(&(node, key, owner))
                    .and_then(|lives| lives.last_mut())
                {
                    life.gone = Some(at);
                }
            }
            last_read[node] = Some(at);
        }
        rounds.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(config.every);
    }
    let mut lives: Vec<KeyLife> = seen.into_values().flatten().collect();
    lives.sort_by_key(|l| (l.first_seen, l.node));
    lives
}
