//! Promoting a shard's replica: [`ShardedCluster::failover`] (the replica
//! takes over with what it has) and [`ShardedCluster::failover_lagging`]
//! (the dangerous case a lock must survive: the promoted replica lacks the
//! latest acknowledged writes). Both end with a bounded wait until every
//! running node of the master sees the new primary owning the shard's slots.

use std::time::Duration;

use super::ShardedCluster;
use super::settle::{node_command, step_failed};
use crate::error::HarnessError;

/// How long a node may take to answer a failover step.
const STEP_TIMEOUT: Duration = Duration::from_secs(2);

impl ShardedCluster {
    /// Promotes shard `shard`'s replica with `CLUSTER FAILOVER TAKEOVER`
    /// (no agreement asked of anyone, as an operator forcing it would):
    /// returns once every running node of master `master` sees it owning
    /// the shard's slots with `cluster_state:ok`, and the old primary, if
    /// running, follows it as its replica (linked). The two swap places in
    /// [`primary_index`](Self::primary_index) and
    /// [`replica_index`](Self::replica_index).
    ///
    /// The replica has what reached it: a write the old primary acknowledged
    /// but had not yet sent is lost (`WAIT 1 <ms>` before makes sure there is
    /// none; [`failover_lagging`](Self::failover_lagging) makes sure there is).
    ///
    /// # Errors
    ///
    /// [`HarnessError::ClusterLayout`] for a bad master or shard, or a shard
    /// with no replica (start with 1 replica); [`HarnessError::ClusterStep`]
    /// when the replica refuses; [`HarnessError::ClusterNotSettled`] when the
    /// nodes did not agree within 20 s (a paused node never does).
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 1, 1).unwrap();
    /// let (old_primary, replica) = (masters.primary_index(0, 0), masters.replica_index(0, 0));
    /// masters.failover(0, 0).unwrap();
    /// assert_eq!(Some(masters.primary_index(0, 0)), replica);
    /// assert_eq!(masters.replica_index(0, 0), Some(old_primary));
    /// ```
    pub fn failover(&self, master: usize, shard: usize) -> Result<(), HarnessError> {
        let replica = self.replica_of(master, shard)?;
        self.take_over(master, shard, replica)
    }

    /// Promotes shard `shard`'s replica WITHOUT the writes made during
    /// `during`, as when a primary dies before its replica got its latest
    /// writes:
    ///
    /// 1. the replica is stopped (SIGSTOP), and the primary drops its link
    ///    to it (`CLIENT KILL TYPE replica`), so nothing more reaches it,
    ///    not even into its socket buffer;
    /// 2. `during` runs: the caller writes (to the primary, which
    ///    acknowledges each write as usual; `WAIT 1` there returns 0);
    /// 3. the primary is killed (SIGKILL) and stays down;
    /// 4. the replica resumes (SIGCONT) and takes over (`CLUSTER FAILOVER
    ///    TAKEOVER`); this returns once every running node sees it owning the
    ///    shard's slots with `cluster_state:ok`.
    ///
    /// Lost: every write the primary acknowledged from step 1 on (by
    /// `during` or any other client), in the shard's slots. Also lost: a
    /// write acknowledged just before the call that had not been sent to the
    /// replica yet (`WAIT 1 <ms>` before the call rules that out). Kept:
    /// everything the replica had received. The old primary stays down (its
    /// index is then [`replica_index`](Self::replica_index)); restarted, it
    /// comes back empty and follows the new primary.
    ///
    /// # Errors
    ///
    /// As [`failover`](Self::failover); `during`'s result comes back only
    /// when the whole fault went through.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 1, 1).unwrap();
    /// masters.failover_lagging(0, 0, || {
    ///     masters.command_for_key(0, "late", &["SET", "late", "1"]).unwrap();
    /// }).unwrap();
    /// // the new primary never had it
    /// assert_eq!(masters.command_for_key(0, "late", &["GET", "late"]).unwrap().as_text(), None);
    /// assert!(!masters.master(0).is_running(masters.replica_index(0, 0).unwrap()));
    /// ```
    pub fn failover_lagging<T>(
        &self,
        master: usize,
        shard: usize,
        during: impl FnOnce() -> T,
    ) -> Result<T, HarnessError> {
        let replica = self.replica_of(master, shard)?;
        let primary = self.primary_index(master, shard);
        let cluster = self.master(master);
        cluster.pause(replica)?;
        // Resumes the replica however this ends (an error, `during` panicking).
        let _resume = ResumeOnDrop {
            sharded: self,
            master,
            replica,
        };
        node_command(
            cluster.port(primary),
            &["CLIENT", "KILL", "TYPE", "replica"],
            STEP_TIMEOUT,
        )
        .map_err(step_failed(master, shard, "CLIENT KILL TYPE replica"))?;
        let result = during();
        cluster.kill(primary)?;
        cluster.resume(replica)?;
        self.take_over(master, shard, replica)?;
        Ok(result)
    }

    /// Shard `shard`'s replica's index, or why there is none.
    fn replica_of(&self, master: usize, shard: usize) -> Result<usize, HarnessError> {
        self.check_shard(master, shard)?;
        self.replica_index(master, shard).ok_or_else(|| {
            HarnessError::ClusterLayout(format!(
                "master {master}, shard {shard} has no replica to fail over to (start with 1 replica)"
            ))
        })
    }

    /// `CLUSTER FAILOVER TAKEOVER` on `replica`, then the roles swapped and
    /// the wait until every running node agrees.
    fn take_over(&self, master: usize, shard: usize, replica: usize) -> Result<(), HarnessError> {
        let port = self.master(master).port(replica);
        node_command(port, &["CLUSTER", "FAILOVER", "TAKEOVER"], STEP_TIMEOUT)
            .map_err(step_failed(master, shard, "CLUSTER FAILOVER TAKEOVER"))?;
        self.update_layout(master, |layout| {
            let (old_primary, _) = layout.roles[shard];
            layout.roles[shard] = (replica, Some(old_primary));
        });
        self.wait_settled(master)
    }
}

/// SIGCONTs a paused replica when dropped (a no-op if it runs or is gone).
#[derive(Debug)]
struct ResumeOnDrop<'a> {
    sharded: &'a ShardedCluster,
    master: usize,
    replica: usize,
}

impl Drop for ResumeOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.sharded.master(self.master).resume(self.replica);
    }
}
