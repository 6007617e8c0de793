//! The nemesis: random faults, one at a time, on a random minority of nodes
//! or on one client group, healed before the next, on a thread of its own
//! (cluster control is blocking). Each fault is logged with its targets and
//! its start and end on the history's clock.
//!
//! The [`FaultKind::SAFE`](crate::FaultKind::SAFE) kinds stay within
//! Redlock's assumptions (a minority misbehaves, clocks jump within the
//! drift budget, a killed node keeps its keys through persistence or a
//! restart delay, a client is cut off), so any violation found under them
//! is a bug in the lock, not in the experiment. `client-pause` breaks the
//! holder's side of the contract (only fencing protects the data then) and
//! `forget` the nodes' side: they exist to show the checker catching what
//! they cause.
//!
//! On cluster masters ([`Nemesis::start_sharded`]) it moves slots and
//! fails shards over instead ([`FaultKind::CLUSTER`](crate::FaultKind::CLUSTER)),
//! one fault at a time on any number of masters, a lagging failover on up
//! to `max_nodes`.
//!
//! This file holds the running [`Nemesis`]; its configuration is in
//! `nemesis_config.rs`, its loop (which fault, on which nodes, logged) in
//! `rounds.rs` (`shard_rounds.rs` on cluster masters), what each fault
//! does in `strike.rs` (`script-flush` in `strike_flush.rs`;
//! `shard_strike.rs`), and which nodes a fence-loss may strike in
//! `clock_leads.rs`.
//!
//! May import: the rest of `faults/` (the fault kinds, the log, client
//! groups, the proxies it drives in `net/`) and `nodes`. Nothing in
//! `faults/` imports this folder but `faults/mod.rs`.

mod clock_leads;
mod nemesis_config;
mod rounds;
mod shard_rounds;
mod shard_strike;
mod strike;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

pub use nemesis_config::NemesisConfig;

use super::fault_log::FaultLog;
use super::net::Proxies;
use crate::nodes::{Cluster, ShardedCluster};

/// A running nemesis; [`stop`](Self::stop) heals and returns the log. Dropping
/// it also stops it (and heals).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use redquorum_harness::{Cluster, FaultKind, Nemesis, NemesisConfig, Proxies};
///
/// let cluster = Arc::new(Cluster::start(3).unwrap());
/// let proxies = Arc::new(Proxies::start(&cluster).unwrap());
/// let config = NemesisConfig { kinds: vec![FaultKind::Reset], ..Default::default() };
/// let nemesis = Nemesis::start(cluster.clone(), proxies, config);
/// std::thread::sleep(std::time::Duration::from_millis(400));
/// let log = nemesis.stop();
/// assert!(log.injected.get(&FaultKind::Reset).copied().unwrap_or(0) >= 1);
/// ```
#[derive(Debug)]
pub struct Nemesis {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<FaultLog>>,
}

impl Nemesis {
    /// Starts injecting faults on `cluster` (process faults) and `proxies` (network faults).
    ///
    /// Process faults on external nodes are skipped and logged as errors.
    ///
    /// # Examples
    ///
    /// See [`Nemesis`].
    #[must_use]
    pub fn start(cluster: Arc<Cluster>, proxies: Arc<Proxies>, config: NemesisConfig) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("nemesis".into())
            .spawn(move || rounds::run(&cluster, &proxies, &config, &flag))
            .ok();
        Self { stop, thread }
    }

    /// Starts injecting the faults of cluster masters
    /// ([`FaultKind::CLUSTER`](crate::FaultKind::CLUSTER)) on `sharded`:
    /// slot migrations and failovers aimed at `config.lock_keys`. Other
    /// kinds in `config.kinds` are skipped and logged as errors.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use redquorum_harness::{FaultKind, Nemesis, NemesisConfig, ShardedCluster};
    ///
    /// let masters = Arc::new(ShardedCluster::start(1, 2, 0).unwrap());
    /// let config = NemesisConfig {
    ///     kinds: vec![FaultKind::Migrate],
    ///     lock_keys: vec!["lock:{r0}".into()],
    ///     max_fault: Duration::from_millis(100),
    ///     ..Default::default()
    /// };
    /// let nemesis = Nemesis::start_sharded(masters.clone(), config);
    /// std::thread::sleep(Duration::from_millis(600));
    /// let log = nemesis.stop();
    /// assert!(log.injected[&FaultKind::Migrate] >= 1, "{:?}", log.errors);
    /// ```
    #[must_use]
    pub fn start_sharded(sharded: Arc<ShardedCluster>, config: NemesisConfig) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("nemesis".into())
            .spawn(move || shard_rounds::run(&sharded, &config, &flag))
            .ok();
        Self { stop, thread }
    }

    /// Stops after the current fault, heals it, and returns what was done.
    ///
    /// # Examples
    ///
    /// See [`Nemesis`].
    #[must_use]
    pub fn stop(mut self) -> FaultLog {
        self.finish()
    }

    fn finish(&mut self) -> FaultLog {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Nemesis {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
