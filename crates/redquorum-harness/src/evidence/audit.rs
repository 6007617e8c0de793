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
//! On cluster masters (`redis-cluster://`) a voter is a master: each read
//! of it reads every shard primary it has now and counts only when all
//! answered (`audit_read.rs`); the lives are kept in `audit_lives.rs`.
//!
//! The key layout is the library's business: the audit takes the pattern of
//! lock keys and the suffix of keys to skip (fence counters). It reads the
//! library's lock record, one hash per resource name at
//! `<prefix>{<escaped name>}` whose `h:<token>` fields are the live holds and
//! their expiries (the fence counter is at `<prefix>{<escaped name>}:fence`),
//! and, for tests that plant keys by hand, a string key's value as its owner.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::audit_lives;
use super::audit_read::Voters;
use super::backing::Backing;
use crate::micros;
use crate::nodes::{Cluster, ShardedCluster};

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
    thread: Option<JoinHandle<(Vec<KeyLife>, Backing)>>,
}

impl KeyAudit {
    /// Starts reading `cluster`'s nodes.
    ///
    /// # Examples
    ///
    /// See [`KeyAudit`].
    #[must_use]
    pub fn start(cluster: Arc<Cluster>, config: AuditConfig) -> Self {
        Self::reading(Voters::servers(cluster), config)
    }

    /// Starts reading `sharded`'s masters: each read of a master is one of
    /// each of its shard primaries now (after `ASKING`, so a slot's
    /// migration target shows the keys it imports), and counts only when
    /// every one answered. Its lives name masters by index.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use redquorum_harness::{AuditConfig, KeyAudit, ShardedCluster};
    ///
    /// let masters = Arc::new(ShardedCluster::start(1, 2, 0).unwrap());
    /// for key in ["lock:{a}", "lock:{b}"] {
    ///     masters.command_for_key(0, key, &["SET", key, key, "PX", "1000"]).unwrap();
    /// }
    /// let audit = KeyAudit::start_sharded(masters.clone(), AuditConfig::new(Duration::from_secs(2)));
    /// assert!(audit.wait_rounds(2, Duration::from_secs(5)));
    /// let seen = audit.stop();
    /// assert_eq!(seen.len(), 2, "both shards read: {seen:?}");
    /// assert!(seen.iter().all(|life| life.node == 0));
    /// ```
    #[must_use]
    pub fn start_sharded(sharded: Arc<ShardedCluster>, config: AuditConfig) -> Self {
        Self::reading(Voters::sharded(sharded), config)
    }

    fn reading(voters: Voters, config: AuditConfig) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicU64::new(0));
        let (flag, count) = (stop.clone(), rounds.clone());
        let thread = std::thread::Builder::new()
            .name("key-audit".into())
            .spawn(move || audit_lives::run(voters, &config, &flag, &count))
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
        self.finish().0
    }

    /// Stops and returns the lives, as [`stop`](Self::stop), and every
    /// round's [`Backing`]: each read's times and each hold's expiry at
    /// every age.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use redquorum_harness::{AuditConfig, Cluster, KeyAudit};
    ///
    /// let cluster = Arc::new(Cluster::start(1).unwrap());
    /// cluster.command(0, &["SET", "lock:r", "young", "PX", "1900"]).unwrap();
    /// let audit = KeyAudit::start(cluster.clone(), AuditConfig::new(Duration::from_secs(2)));
    /// assert!(audit.wait_rounds(2, Duration::from_secs(5)));
    /// let (lives, backing) = audit.stop_with_backing();
    /// assert!(lives.is_empty(), "too young for the lives");
    /// assert_eq!(backing.holds[0].owner, "young");
    /// assert!(backing.rounds.len() >= 2);
    /// ```
    #[must_use]
    pub fn stop_with_backing(mut self) -> (Vec<KeyLife>, Backing) {
        self.finish()
    }

    fn finish(&mut self) -> (Vec<KeyLife>, Backing) {
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
