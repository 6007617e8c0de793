//! Where everything of a [`ShardedCluster`] is now: each shard's primary
//! and replica (they swap at a failover), their ports, and which shard owns
//! a slot (it changes at a migration).

use super::ShardedCluster;
use super::shard_ports::ShardPorts;

impl ShardedCluster {
    /// The index in [`master`](Self::master)`(master)` of shard `shard`'s primary now.
    ///
    /// # Panics
    ///
    /// If `master` or `shard` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 1).unwrap();
    /// assert_eq!(masters.primary_index(0, 1), 1);
    /// ```
    #[must_use]
    pub fn primary_index(&self, master: usize, shard: usize) -> usize {
        self.layout(master).roles[shard].0
    }

    /// The index in [`master`](Self::master)`(master)` of shard `shard`'s replica now, if any.
    ///
    /// # Panics
    ///
    /// If `master` or `shard` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 1).unwrap();
    /// assert_eq!(masters.replica_index(0, 1), Some(3));
    /// ```
    #[must_use]
    pub fn replica_index(&self, master: usize, shard: usize) -> Option<usize> {
        self.layout(master).roles[shard].1
    }

    /// The port of shard `shard`'s primary now.
    ///
    /// # Panics
    ///
    /// If `master` or `shard` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 1, 0).unwrap();
    /// assert_eq!(masters.primary_port(0, 0), masters.master(0).port(0));
    /// ```
    #[must_use]
    pub fn primary_port(&self, master: usize, shard: usize) -> u16 {
        self.masters[master].port(self.primary_index(master, shard))
    }

    /// The port of shard `shard`'s replica now, if it has one.
    ///
    /// # Panics
    ///
    /// If `master` or `shard` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 1, 1).unwrap();
    /// assert_eq!(masters.replica_port(0, 0), Some(masters.master(0).port(1)));
    /// ```
    #[must_use]
    pub fn replica_port(&self, master: usize, shard: usize) -> Option<u16> {
        self.replica_index(master, shard)
            .map(|index| self.masters[master].port(index))
    }

    /// The shard that owns slot `slot` of master `master` now.
    ///
    /// # Panics
    ///
    /// If `master` or `slot` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 0).unwrap();
    /// assert_eq!((masters.shard_of_slot(0, 0), masters.shard_of_slot(0, 16383)), (0, 1));
    /// ```
    #[must_use]
    pub fn shard_of_slot(&self, master: usize, slot: u16) -> usize {
        usize::from(self.layout(master).owners[usize::from(slot)])
    }

    /// Each shard's ports now.
    pub(super) fn shard_ports(&self, master: usize) -> Vec<ShardPorts> {
        let cluster = &self.masters[master];
        self.layout(master)
            .roles
            .iter()
            .map(|&(primary, replica)| ShardPorts {
                primary: cluster.port(primary),
                replica: replica.map(|r| cluster.port(r)),
            })
            .collect()
    }
}
