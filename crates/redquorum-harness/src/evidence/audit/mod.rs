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
//! answered (`read.rs`, `audit.lua`); the lives are kept in `lives.rs`.
//! What it reads is set in `config.rs`, what it found is a
//! [`KeyLife`] (`key_life.rs`).
//!
//! The key layout is the library's business: the audit takes the pattern of
//! lock keys and the suffix of the fence counters' keys, which it reads as
//! counters, not holds (their values go to the [`Backing`], for the token
//! premise). It reads the library's lock record, one hash per resource name
//! at `<prefix>{<escaped name>}` whose `h:<token>` fields are the live holds
//! and their expiries (the fence counter is at
//! `<prefix>{<escaped name>}:fence`), and, for tests that plant keys by
//! hand, a string key's value as its owner.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod backing;
mod config;
mod key_life;
mod lives;
mod nudge;
mod read;

use crate::nodes::{Cluster, ShardedCluster};
pub use backing::{AuditRead, AuditRound, Backing, CounterTrack, HoldTrack, SAME_EXPIRY, Seen};
pub use config::{AuditConfig, LockKeys};
pub use key_life::KeyLife;
pub use nudge::AuditNudge;
use read::Voters;

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
            .spawn(move || lives::run(voters, &config, &flag, &count))
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
