//! Sharded masters, for `redis-cluster://` URLs: [`ShardedCluster`], N
//! masters (voters) for the lock, each a local Redis Cluster of S shards,
//! each shard a primary and optionally one replica. Each master's processes
//! are one harness [`Cluster`], so the process faults (`kill`, `pause`,
//! `resume`, `restart`) work on them by index.
//!
//! This file starts them; its methods by concern are in `placement.rs`
//! (where each shard's primary and replica are now, which shard owns a
//! slot), `routing.rs` (a key's primary, commands by key, keys),
//! `migrate.rs` (moving a slot, whole or mid-way with [`Migration`]) and
//! `failover.rs` (promoting a replica, also one that lags). What they stand
//! on: `slots.rs` (the 16384 slots, [`slot_of`]), `form.rs` (making a
//! cluster of running nodes by port, also for the CLI:
//! [`form_redis_cluster`]), `settle.rs` (the bounded waits until every
//! node agrees) and `shard_ports.rs` (a shard by its nodes' ports,
//! [`ShardPorts`], which the other three share).
//!
//! May import: the rest of `nodes/` (processes, RESP). This file declares
//! the files that add methods to [`ShardedCluster`] and re-exports their
//! public items, and uses none of their methods; they import it.

mod failover;
mod form;
mod migrate;
mod placement;
mod routing;
mod settle;
mod shard_ports;
mod slots;

pub use form::{form_redis_cluster, redis_cluster_args, redis_cluster_url};
pub use migrate::Migration;
pub use shard_ports::ShardPorts;
pub use slots::{SLOT_COUNT, slot_of};

use std::sync::Mutex;

use self::settle::Expected;
use self::slots::even_owners;
use crate::error::HarnessError;
use crate::nodes::cluster::{Cluster, lock};

/// N Redis masters for tests, each a local Redis Cluster whose keys are
/// spread over S shards by slot: what a `redis-cluster://` node URL stands
/// for (one voter).
///
/// In master `m`'s [`Cluster`] ([`master`](Self::master)), processes
/// `0..S` start as the primaries of shards `0..S` and, with a replica per
/// shard, processes `S..2S` as their replicas; after a
/// [`failover`](Self::failover) the two swap, which
/// [`primary_index`](Self::primary_index) and
/// [`replica_index`](Self::replica_index) follow. Every process is killed
/// when the `ShardedCluster` is dropped.
///
/// The harness is the only thing that moves slots or promotes replicas
/// (replicas run with `cluster-replica-no-failover yes`); it keeps which
/// shard owns each slot, and each of its steps waits until every running
/// node agrees. The nodes keep nothing on disk, as [`Cluster::start`]'s do.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use redquorum_harness::ShardedCluster;
///
/// let masters = ShardedCluster::start(1, 2, 0)?;
/// assert!(masters.urls()[0].starts_with("redis-cluster://127.0.0.1:"));
/// masters.command_for_key(0, "lock:a", &["SET", "lock:a", "1"])?;
/// let port = masters.primary_for_key(0, "lock:a");
/// let node = masters.master(0);
/// let index = (0..node.len()).find(|&i| node.port(i) == port).unwrap();
/// assert_eq!(node.command(index, &["GET", "lock:a"])?.as_text().as_deref(), Some("1"));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ShardedCluster {
    masters: Vec<Cluster>,
    shards: usize,
    replicas: usize,
    layouts: Mutex<Vec<Layout>>,
}

/// Where one master's shards are now.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    /// Per shard: the process indexes of its primary and of its replica.
    pub(super) roles: Vec<(usize, Option<usize>)>,
    /// Slot → shard.
    pub(super) owners: Vec<u16>,
}

impl ShardedCluster {
    /// Starts `masters` local Redis Clusters of `shards` primaries each
    /// (the 16384 slots split evenly), each primary with `replicas` (0 or 1)
    /// replicas, all on free loopback ports. Returns once every node of every
    /// cluster says `cluster_state:ok`, agrees on every slot's owner, and every
    /// replica is linked to its primary.
    ///
    /// # Errors
    ///
    /// [`HarnessError::ClusterLayout`] for 0 shards or more than 1 replica;
    /// a process that does not start; a cluster that does not form
    /// ([`HarnessError::ClusterStep`], [`HarnessError::ClusterNotSettled`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(3, 1, 0).unwrap();
    /// assert_eq!((masters.len(), masters.shards()), (3, 1));
    /// assert!(redquorum_harness::ShardedCluster::start(1, 0, 0).is_err());
    /// ```
    pub fn start(masters: usize, shards: usize, replicas: usize) -> Result<Self, HarnessError> {
        if shards == 0 || shards > usize::from(SLOT_COUNT) {
            return Err(HarnessError::ClusterLayout(format!(
                "{shards} shards: a cluster has 1 to {SLOT_COUNT}"
            )));
        }
        if replicas > 1 {
            return Err(HarnessError::ClusterLayout(format!(
                "{replicas} replicas per shard: the harness starts 0 or 1"
            )));
        }
        let processes = shards * (1 + replicas);
        let clusters = (0..masters)
            .map(|_| {
                Cluster::builder(processes)
                    .server_args(redis_cluster_args())
                    .start()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let layout = Layout {
            roles: (0..shards)
                .map(|shard| (shard, (replicas == 1).then_some(shards + shard)))
                .collect(),
            owners: even_owners(shards),
        };
        let sharded = Self {
            masters: clusters,
            shards,
            replicas,
            layouts: Mutex::new(vec![layout; masters]),
        };
        // Forming waits mostly for gossip: form the masters side by side.
        std::thread::scope(|scope| {
            let forming: Vec<_> = (0..masters)
                .map(|m| {
                    let sharded = &sharded;
                    scope.spawn(move || form_redis_cluster(m, &sharded.shard_ports(m)))
                })
                .collect();
            forming
                .into_iter()
                .try_for_each(|f| f.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        })?;
        Ok(sharded)
    }

    /// The number of masters (voters).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::ShardedCluster::start(1, 1, 0).unwrap().len(), 1);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.masters.len()
    }

    /// True for no masters.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!redquorum_harness::ShardedCluster::start(1, 1, 0).unwrap().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.masters.is_empty()
    }

    /// The number of shards (primaries) of each master.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::ShardedCluster::start(1, 2, 0).unwrap().shards(), 2);
    /// ```
    #[must_use]
    pub fn shards(&self) -> usize {
        self.shards
    }

    /// The number of replicas of each shard (0 or 1).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::ShardedCluster::start(1, 1, 1).unwrap().replicas(), 1);
    /// ```
    #[must_use]
    pub fn replicas(&self) -> usize {
        self.replicas
    }

    /// Master `master`'s processes, for process faults by index (see
    /// [`primary_index`](Self::primary_index)) and raw commands.
    ///
    /// # Panics
    ///
    /// If `master` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 1).unwrap();
    /// assert_eq!(masters.master(0).len(), 4);
    /// ```
    #[must_use]
    pub fn master(&self, master: usize) -> &Cluster {
        &self.masters[master]
    }

    /// Every master's URL (see [`url`](Self::url)).
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(2, 1, 0).unwrap();
    /// assert_eq!(masters.urls().len(), 2);
    /// ```
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        (0..self.len()).map(|m| self.url(m)).collect()
    }

    /// Master `master`'s URL: `redis-cluster://127.0.0.1:P0?node=127.0.0.1:P1&...`,
    /// the current primaries of its shards in shard order (only `P0` for one shard).
    ///
    /// # Panics
    ///
    /// If `master` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 0).unwrap();
    /// let (p0, p1) = (masters.primary_port(0, 0), masters.primary_port(0, 1));
    /// assert_eq!(masters.url(0), format!("redis-cluster://127.0.0.1:{p0}?node=127.0.0.1:{p1}"));
    /// ```
    #[must_use]
    pub fn url(&self, master: usize) -> String {
        let ports: Vec<u16> = self.shard_ports(master).iter().map(|s| s.primary).collect();
        redis_cluster_url(&ports)
    }

    /// Waits until every running node of master `master` says
    /// `cluster_state:ok`, agrees which primary owns each slot, and every
    /// running replica is linked to its primary: after a restart, say.
    ///
    /// # Errors
    ///
    /// [`HarnessError::ClusterNotSettled`] after 20 s, naming a node not there
    /// yet and what it said (a paused node never is).
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 0).unwrap();
    /// masters.master(0).restart(1).unwrap();
    /// masters.wait_settled(0).unwrap();
    /// ```
    pub fn wait_settled(&self, master: usize) -> Result<(), HarnessError> {
        self.check_master(master)?;
        let layout = self.layout(master);
        let shards = self.shard_ports(master);
        let cluster = &self.masters[master];
        let live: Vec<u16> = (0..cluster.len())
            .filter(|&i| cluster.is_running(i))
            .map(|i| cluster.port(i))
            .collect();
        Expected {
            master,
            shards: &shards,
            owners: &layout.owners,
            live: &live,
        }
        .wait()
    }

    /// A copy of master `master`'s layout (panics out of range).
    pub(super) fn layout(&self, master: usize) -> Layout {
        lock(&self.layouts)[master].clone()
    }

    /// Changes master `master`'s layout (panics out of range).
    pub(super) fn update_layout(&self, master: usize, change: impl FnOnce(&mut Layout)) {
        change(&mut lock(&self.layouts)[master]);
    }

    /// Refuses a master index out of range.
    pub(super) fn check_master(&self, master: usize) -> Result<(), HarnessError> {
        if master < self.len() {
            Ok(())
        } else {
            Err(HarnessError::ClusterLayout(format!(
                "no master {master} (there are {})",
                self.len()
            )))
        }
    }

    /// Refuses a master or shard index out of range.
    pub(super) fn check_shard(&self, master: usize, shard: usize) -> Result<(), HarnessError> {
        self.check_master(master)?;
        if shard < self.shards {
            Ok(())
        } else {
            Err(HarnessError::ClusterLayout(format!(
                "master {master} has no shard {shard} (it has {})",
                self.shards
            )))
        }
    }
}
