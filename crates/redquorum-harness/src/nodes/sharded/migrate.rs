//! Moving a slot between the shards of a sharded master, as `redis-cli
//! --cluster reshard` does: the target marked `IMPORTING`, the source
//! `MIGRATING`, the keys moved with `MIGRATE` (their TTLs with them), then
//! `SETSLOT NODE` on the target, the source and the other primaries, and a
//! bounded wait until every node agrees. In one call
//! ([`ShardedCluster::migrate_slot`]) or in two
//! ([`ShardedCluster::begin_migration`], then [`Migration::finish`]) for
//! tests that act mid-migration (the source then answers `ASK` for the
//! keys already moved).

use std::time::{Duration, Instant};

use super::ShardedCluster;
use super::form::node_id;
use super::settle::{SETTLE_WITHIN, node_command, step_failed};
use super::slots::{SLOT_COUNT, slot_of};
use crate::error::HarnessError;
use crate::nodes::resp::Reply;

/// How long a node may take to answer `MIGRATE` (which itself gives the
/// target 5 s).
const MIGRATE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long any other step's command may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(2);
/// Keys moved per `MIGRATE`.
const BATCH: &str = "100";

impl ShardedCluster {
    /// Moves slot `slot` of master `master`, with its keys and their TTLs,
    /// to shard `to_shard`'s primary; returns once every running node says
    /// that primary owns it. Nothing to do if it already does.
    ///
    /// # Errors
    ///
    /// [`HarnessError::ClusterLayout`] for a bad master, shard or slot;
    /// [`HarnessError::ClusterStep`] for a step a node refused or that timed
    /// out (a paused or killed source or target);
    /// [`HarnessError::ClusterNotSettled`] when the nodes did not agree
    /// within 20 s.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{ShardedCluster, slot_of};
    /// let masters = ShardedCluster::start(1, 2, 0).unwrap();
    /// masters.command_for_key(0, "foo", &["SET", "foo", "1"]).unwrap();
    /// assert_eq!(masters.shard_of_slot(0, slot_of("foo")), 1);
    /// masters.migrate_slot(0, slot_of("foo"), 0).unwrap();
    /// assert_eq!(masters.primary_for_key(0, "foo"), masters.primary_port(0, 0));
    /// assert_eq!(masters.command_for_key(0, "foo", &["GET", "foo"]).unwrap().as_text().as_deref(), Some("1"));
    /// ```
    pub fn migrate_slot(
        &self,
        master: usize,
        slot: u16,
        to_shard: usize,
    ) -> Result<(), HarnessError> {
        check_slot(slot)?;
        self.check_shard(master, to_shard)?;
        if self.shard_of_slot(master, slot) == to_shard {
            return Ok(());
        }
        self.begin_migration(master, slot, to_shard)?.finish()
    }

    /// Starts moving slot `slot` of master `master` to shard `to_shard`:
    /// the target is marked `IMPORTING`, the source `MIGRATING`, and no key
    /// moves yet. Move some with [`Migration::move_key`]; end with
    /// [`Migration::finish`] (dropping an unfinished `Migration` finishes
    /// it too, errors ignored).
    ///
    /// # Errors
    ///
    /// As [`migrate_slot`](Self::migrate_slot), and
    /// [`HarnessError::ClusterLayout`] if the slot already is on `to_shard`.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{ShardedCluster, slot_of};
    /// let masters = ShardedCluster::start(1, 2, 0).unwrap();
    /// masters.command_for_key(0, "foo", &["SET", "foo", "1"]).unwrap();
    /// let migration = masters.begin_migration(0, slot_of("foo"), 0).unwrap();
    /// assert!(migration.move_key("foo").unwrap());
    /// // the source sends clients to the target for the moved key
    /// let source = masters.primary_index(0, 1);
    /// let err = masters.master(0).command(source, &["GET", "foo"]).unwrap_err();
    /// assert!(err.to_string().contains("ASK"));
    /// migration.finish().unwrap();
    /// ```
    pub fn begin_migration(
        &self,
        master: usize,
        slot: u16,
        to_shard: usize,
    ) -> Result<Migration<'_>, HarnessError> {
        check_slot(slot)?;
        self.check_shard(master, to_shard)?;
        let from_shard = self.shard_of_slot(master, slot);
        if from_shard == to_shard {
            return Err(HarnessError::ClusterLayout(format!(
                "master {master}: slot {slot} already is on shard {to_shard}"
            )));
        }
        let (source, target) = (
            self.primary_port(master, from_shard),
            self.primary_port(master, to_shard),
        );
        let source_id = node_id(source).map_err(step_failed(master, from_shard, "CLUSTER MYID"))?;
        let target_id = node_id(target).map_err(step_failed(master, to_shard, "CLUSTER MYID"))?;
        let slot_text = slot.to_string();
        node_command(
            target,
            &["CLUSTER", "SETSLOT", &slot_text, "IMPORTING", &source_id],
            STEP_TIMEOUT,
        )
        .map_err(step_failed(master, to_shard, "CLUSTER SETSLOT IMPORTING"))?;
        node_command(
            source,
            &["CLUSTER", "SETSLOT", &slot_text, "MIGRATING", &target_id],
            STEP_TIMEOUT,
        )
        .map_err(step_failed(master, from_shard, "CLUSTER SETSLOT MIGRATING"))?;
        Ok(Migration {
            sharded: self,
            master,
            slot,
            from_shard,
            to_shard,
            source,
            target,
            target_id,
            finished: false,
        })
    }
}

/// A slot mid-migration between two shards of a sharded master (see
/// [`ShardedCluster::begin_migration`]). Dropped unfinished, it finishes.
///
/// # Examples
///
/// ```
/// use redquorum_harness::ShardedCluster;
/// let masters = ShardedCluster::start(1, 2, 0).unwrap();
/// let migration = masters.begin_migration(0, 0, 1).unwrap();
/// assert_eq!(migration.slot(), 0);
/// migration.finish().unwrap();
/// assert_eq!(masters.shard_of_slot(0, 0), 1);
/// ```
#[derive(Debug)]
#[must_use = "a slot stays mid-migration until finish (or drop)"]
pub struct Migration<'a> {
    sharded: &'a ShardedCluster,
    master: usize,
    slot: u16,
    from_shard: usize,
    to_shard: usize,
    source: u16,
    target: u16,
    target_id: String,
    finished: bool,
}

impl Migration<'_> {
    /// The slot being moved.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 0).unwrap();
    /// assert_eq!(masters.begin_migration(0, 7, 1).unwrap().slot(), 7);
    /// ```
    #[must_use]
    pub fn slot(&self) -> u16 {
        self.slot
    }

    /// Moves `key` (with its TTL) from the source to the target now; false
    /// when the source did not have it.
    ///
    /// # Errors
    ///
    /// [`HarnessError::ClusterLayout`] for a key of another slot;
    /// [`HarnessError::ClusterStep`] when `MIGRATE` fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{ShardedCluster, slot_of};
    /// let masters = ShardedCluster::start(1, 2, 0).unwrap();
    /// let migration = masters.begin_migration(0, slot_of("foo"), 0).unwrap();
    /// assert!(!migration.move_key("foo").unwrap());
    /// ```
    pub fn move_key(&self, key: &str) -> Result<bool, HarnessError> {
        if slot_of(key) != self.slot {
            return Err(HarnessError::ClusterLayout(format!(
                "key {key:?} is in slot {}, not in slot {} being moved",
                slot_of(key),
                self.slot
            )));
        }
        let target = self.target.to_string();
        let args = ["MIGRATE", "127.0.0.1", &target, key, "0", "5000"];
        let reply = node_command(self.source, &args, MIGRATE_TIMEOUT).map_err(step_failed(
            self.master,
            self.from_shard,
            "MIGRATE",
        ))?;
        Ok(reply.as_text().as_deref() == Some("OK"))
    }

    /// Moves the slot's remaining keys, then makes the target its owner on
    /// every primary, and waits until every running node agrees.
    ///
    /// # Errors
    ///
    /// As [`ShardedCluster::migrate_slot`].
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 0).unwrap();
    /// masters.begin_migration(0, 16383, 0).unwrap().finish().unwrap();
    /// assert_eq!(masters.shard_of_slot(0, 16383), 0);
    /// ```
    pub fn finish(mut self) -> Result<(), HarnessError> {
        self.finished = true;
        self.complete()
    }

    fn complete(&self) -> Result<(), HarnessError> {
        let (master, slot) = (self.master, self.slot.to_string());
        self.move_all()?;
        let node = ["CLUSTER", "SETSLOT", &slot, "NODE", &self.target_id];
        // The target first, so that no client is sent back and forth
        // between the two; then the source; then the other primaries, which
        // gossip would tell anyway (so a failure there is not one).
        node_command(self.target, &node, STEP_TIMEOUT).map_err(step_failed(
            master,
            self.to_shard,
            "CLUSTER SETSLOT NODE",
        ))?;
        node_command(self.source, &node, STEP_TIMEOUT).map_err(step_failed(
            master,
            self.from_shard,
            "CLUSTER SETSLOT NODE",
        ))?;
        let sharded = self.sharded;
        for shard in 0..sharded.shards() {
            let index = sharded.primary_index(master, shard);
            let port = sharded.primary_port(master, shard);
            if shard != self.to_shard
                && shard != self.from_shard
                && sharded.master(master).is_running(index)
            {
                let _ = node_command(port, &node, STEP_TIMEOUT);
            }
        }
        let to = u16::try_from(self.to_shard).unwrap_or(u16::MAX);
        sharded.update_layout(master, |layout| layout.owners[usize::from(self.slot)] = to);
        sharded.wait_settled(master)
    }

    /// Moves every key left in the slot on the source, a batch at a time,
    /// for at most 20 s; returns how many it moved.
    fn move_all(&self) -> Result<usize, HarnessError> {
        let failed = |step| step_failed(self.master, self.from_shard, step);
        let (slot, target) = (self.slot.to_string(), self.target.to_string());
        let deadline = Instant::now() + SETTLE_WITHIN;
        let mut moved = 0;
        loop {
            let listed = node_command(
                self.source,
                &["CLUSTER", "GETKEYSINSLOT", &slot, BATCH],
                STEP_TIMEOUT,
            )
            .map_err(failed("CLUSTER GETKEYSINSLOT"))?;
            let keys: Vec<String> = match listed {
                Reply::Array(Some(keys)) => keys.iter().filter_map(Reply::as_text).collect(),
                _ => Vec::new(),
            };
            if keys.is_empty() {
                return Ok(moved);
            }
            if Instant::now() >= deadline {
                return Err(HarnessError::ClusterNotSettled {
                    master: self.master,
                    waited_for: format!("slot {slot} emptied onto port {target}"),
                    within: SETTLE_WITHIN,
                    seen: format!("keys still on port {}: {keys:?}", self.source),
                });
            }
            let mut args = vec!["MIGRATE", "127.0.0.1", &target, "", "0", "5000", "KEYS"];
            args.extend(keys.iter().map(String::as_str));
            node_command(self.source, &args, MIGRATE_TIMEOUT).map_err(failed("MIGRATE"))?;
            moved += keys.len();
        }
    }
}

impl Drop for Migration<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.finished = true;
            let _ = self.complete();
        }
    }
}

/// Refuses a slot number of no slot.
fn check_slot(slot: u16) -> Result<(), HarnessError> {
    if slot < SLOT_COUNT {
        Ok(())
    } else {
        Err(HarnessError::ClusterLayout(format!(
            "slot {slot}: slots are 0 to {}",
            SLOT_COUNT - 1
        )))
    }
}
