//! What each fault of cluster masters ([`FaultKind::CLUSTER`]) does to a
//! [`ShardedCluster`], run on the nemesis's thread: a slot migration, a
//! clean failover, a lagging one and the old primary's return as a
//! replica. Each fault aims at the slot of one lock key the workload uses,
//! so it meets the holds. Every wait is bounded (the harness's own steps
//! settle within 20 s, `WAIT` within 1 s); a step that fails is an error
//! for the fault log, never a panic, and no replica is left stopped (a slot
//! whose migration could not be finished stays mid-migration, said in the
//! log).

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use rand::Rng;
use rand::rngs::StdRng;

use super::nemesis_config::NemesisConfig;
use super::strike::nap;
use crate::error::HarnessError;
use crate::faults::kind::FaultKind;
use crate::nodes::{Reply, SLOT_COUNT, ShardedCluster, slot_of};

/// What a fault of cluster masters struck, and what went wrong on the way.
#[derive(Debug, Default)]
pub(super) struct Struck {
    /// The masters it struck (none: it failed everywhere).
    pub(super) targets: Vec<usize>,
    /// Which slot and shards, in how many steps.
    pub(super) detail: String,
    /// Masters it could not strike, or a step that failed, with why.
    pub(super) errors: Vec<String>,
}

/// The nemesis's hands on cluster masters.
#[derive(Debug)]
pub(super) struct ShardStriker<'a> {
    sharded: &'a ShardedCluster,
    config: &'a NemesisConfig,
    stop: &'a AtomicBool,
    /// Every choice the nemesis makes, from its seed.
    pub(super) rng: StdRng,
}

impl<'a> ShardStriker<'a> {
    pub(super) fn new(
        sharded: &'a ShardedCluster,
        config: &'a NemesisConfig,
        stop: &'a AtomicBool,
        rng: StdRng,
    ) -> Self {
        Self {
            sharded,
            config,
            stop,
            rng,
        }
    }

    /// Strikes `kind` on `targets` (masters) for `length`, and heals it.
    pub(super) fn strike(
        &mut self,
        kind: FaultKind,
        targets: &[usize],
        length: Duration,
    ) -> Struck {
        let key = self.pick_key();
        let mut struck = match kind {
            FaultKind::Migrate => self.migrate(&key, targets, length),
            FaultKind::Failover => self.failover(&key, targets),
            FaultKind::LaggingFailover => self.lagging_failover(&key, targets, length),
            other => Struck {
                errors: vec![format!("{} addresses a single server", other.name())],
                ..Struck::default()
            },
        };
        struck.detail = format!("slot {} of {key}: {}", slot_of(&key), struck.detail);
        struck
    }

    /// One of the workload's lock keys, or a key of a random slot.
    fn pick_key(&mut self) -> String {
        let keys = &self.config.lock_keys;
        if keys.is_empty() {
            format!(
                "redquorum-harness:{{s{}}}",
                self.rng.gen_range(0..SLOT_COUNT)
            )
        } else {
            keys[self.rng.gen_range(0..keys.len())].clone()
        }
    }

    /// The slot of `key` moved to another shard on each target, at once or
    /// in two steps (the lock record and its fence counter first, then a
    /// pause in which operations on them meet `ASK`, then the rest).
    fn migrate(&mut self, key: &str, targets: &[usize], length: Duration) -> Struck {
        let slot = slot_of(key);
        let shards = self.sharded.shards();
        let mut struck = Struck::default();
        let mut moves = Vec::new();
        for &m in targets {
            match other_shard(&mut self.rng, self.sharded.shard_of_slot(m, slot), shards) {
                Some(to) => moves.push((m, to)),
                None => struck
                    .errors
                    .push(format!("master {m}: one shard, nowhere to migrate to")),
            }
        }
        let two_steps = self.rng.gen_bool(0.5);
        let to: Vec<String> = moves
            .iter()
            .map(|(m, to)| format!("master {m} to shard {to}"))
            .collect();
        struck.detail = format!(
            "{}, {}",
            to.join(", "),
            if two_steps { "in two steps" } else { "whole" }
        );
        if !two_steps {
            for (m, to) in moves {
                // Logged as struck even when a step failed: keys may have
                // moved, and the checker must not blame the lock for that.
                if let Err(e) = self.sharded.migrate_slot(m, slot, to) {
                    struck.errors.push(format!("master {m}: {e}"));
                }
                struck.targets.push(m);
            }
            return struck;
        }
        let mut begun = Vec::new();
        for (m, to) in moves {
            match self.sharded.begin_migration(m, slot, to) {
                Ok(migration) => begun.push((m, migration)),
                Err(e) => struck.errors.push(format!("master {m}: {e}")),
            }
        }
        // The record and its fence counter together: an operation on both
        // then meets ASK at the source (one without the other, TRYAGAIN).
        let fence = format!("{key}:fence");
        for (m, migration) in &begun {
            for moved in [key, fence.as_str()] {
                if let Err(e) = migration.move_key(moved) {
                    struck.errors.push(format!("master {m}: {e}"));
                }
            }
        }
        nap(length, self.stop);
        for (m, migration) in begun {
            if let Err(e) = migration.finish() {
                struck.errors.push(format!("master {m}: {e}"));
            }
            struck.targets.push(m);
        }
        struck
    }

    /// On each target, the replica of the shard serving `key` takes over
    /// once it has every write its primary acknowledged.
    fn failover(&mut self, key: &str, targets: &[usize]) -> Struck {
        let slot = slot_of(key);
        let mut struck = Struck::default();
        let mut shards = Vec::new();
        for &m in targets {
            let shard = self.sharded.shard_of_slot(m, slot);
            let old = self.sharded.primary_index(m, shard);
            let done = self.caught_up(m, shard, key).and_then(|()| {
                self.sharded
                    .failover(m, shard)
                    .map_err(|e| format!("master {m}: {e}"))
            });
            // A takeover whose settling failed still happened: logged.
            if done.is_ok() || self.sharded.primary_index(m, shard) != old {
                struck.targets.push(m);
                shards.push(format!("master {m} shard {shard}"));
            }
            if let Err(e) = done {
                struck.errors.push(e);
            }
        }
        struck.detail = format!("caught up, {}", shards.join(", "));
        struck
    }

    /// On each target whose replica is caught up, the replica of the shard
    /// serving `key` is cut off, the fault's length passes (the primary
    /// acknowledging writes the replica never gets), the primary is killed
    /// and the replica takes over: nested, so the writes lost are the same
    /// on every target. Then each old primary restarts empty as the new
    /// one's replica.
    fn lagging_failover(&mut self, key: &str, targets: &[usize], length: Duration) -> Struck {
        let slot = slot_of(key);
        let mut struck = Struck::default();
        let mut hits = Vec::new();
        for &m in targets {
            let shard = self.sharded.shard_of_slot(m, slot);
            // Caught up first: what is lost is then what was written
            // while the fault lasted, no more.
            match self.caught_up(m, shard, key) {
                Ok(()) => hits.push((m, shard, self.sharded.primary_index(m, shard))),
                Err(e) => struck.errors.push(e),
            }
        }
        let pairs: Vec<(usize, usize)> = hits.iter().map(|&(m, shard, _)| (m, shard)).collect();
        let stop = self.stop;
        if let Err(e) = promote_lagging(self.sharded, &pairs, &mut || {
            nap(length, stop);
        }) {
            struck.errors.push(e.to_string());
        }
        let mut shards = Vec::new();
        for (m, shard, old) in hits {
            if self.sharded.primary_index(m, shard) != old {
                struck.targets.push(m);
                shards.push(format!("master {m} shard {shard}"));
            }
            if let Err(e) = self.restore(m, shard) {
                struck.errors.push(e);
            }
        }
        struck.detail = format!("lagging, {}", shards.join(", "));
        struck
    }

    /// Ok when shard `shard` of master `m` has a running replica that has
    /// every write its primary acknowledged: a marker in `key`'s slot is
    /// written and `WAIT`ed for (one replication stream: the replica then
    /// has every earlier write too). A replica that is down is restarted
    /// first.
    fn caught_up(&self, m: usize, shard: usize, key: &str) -> Result<(), String> {
        self.restore(m, shard)?;
        let marker = marker_for(key)?;
        let replies = self
            .sharded
            .commands_for_key(
                m,
                &marker,
                &[&["SET", &marker, "1", "PX", "1000"], &["WAIT", "1", "1000"]],
            )
            .map_err(|e| format!("master {m}: WAIT before the failover: {e}"))?;
        match replies.get(1).and_then(Reply::as_int) {
            Some(n) if n >= 1 => Ok(()),
            other => Err(format!(
                "master {m}: shard {shard}'s replica did not catch up within 1 s (WAIT said {other:?}): not failed over"
            )),
        }
    }

    /// Starts shard `shard`'s replica again if it is down (the old primary
    /// of a lagging failover): it comes back empty and syncs from the
    /// primary; returns once it is linked.
    fn restore(&self, m: usize, shard: usize) -> Result<(), String> {
        let Some(replica) = self.sharded.replica_index(m, shard) else {
            return Err(format!("master {m}: shard {shard} has no replica"));
        };
        let cluster = self.sharded.master(m);
        if cluster.is_running(replica) {
            return Ok(());
        }
        cluster
            .restart(replica)
            .and_then(|()| self.sharded.wait_settled(m))
            .map_err(|e| {
                format!("master {m}: shard {shard}'s replica did not come back ({e}): no failover there until it does")
            })
    }
}

/// The lagging failovers of `hits` (master, shard), nested: each replica
/// is cut off before `during` runs and promoted after it.
fn promote_lagging(
    sharded: &ShardedCluster,
    hits: &[(usize, usize)],
    during: &mut dyn FnMut(),
) -> Result<(), HarnessError> {
    match hits.split_first() {
        None => {
            during();
            Ok(())
        }
        Some((&(m, shard), rest)) => {
            sharded.failover_lagging(m, shard, || promote_lagging(sharded, rest, during))?
        }
    }
}

/// A shard other than `from` of `shards`, at random; none for one shard.
pub(super) fn other_shard(rng: &mut impl Rng, from: usize, shards: usize) -> Option<usize> {
    if shards < 2 {
        return None;
    }
    let pick = rng.gen_range(0..shards - 1);
    Some(if pick >= from { pick + 1 } else { pick })
}

/// The harness's marker key in `key`'s slot (sharing its hash tag), for
/// the `WAIT` before a failover: the library never reads it.
pub(super) fn marker_for(key: &str) -> Result<String, String> {
    let tag = key
        .split_once('{')
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(tag, _)| tag)
        .filter(|tag| !tag.is_empty())
        .unwrap_or(key);
    let marker = format!("redquorum-harness:wait:{{{tag}}}");
    if slot_of(&marker) == slot_of(key) {
        Ok(marker)
    } else {
        Err(format!("no marker key shares the slot of {key:?}"))
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn another_shard_is_never_the_source_and_each_is_chosen() {
        let mut rng = StdRng::seed_from_u64(3);
        assert_eq!(other_shard(&mut rng, 0, 1), None);
        let mut seen = [0; 4];
        for _ in 0..400 {
            let to = other_shard(&mut rng, 2, 4).unwrap();
            assert_ne!(to, 2);
            seen[to] += 1;
        }
        assert!(seen[0] > 0 && seen[1] > 0 && seen[3] > 0, "{seen:?}");
    }

    #[test]
    fn the_marker_shares_the_slot_of_a_tagged_or_untagged_key() {
        for key in ["redquorum-torture:1:0:{r0}", "lock:{r12}:fence", "plain"] {
            let marker = marker_for(key).unwrap();
            assert_eq!(slot_of(&marker), slot_of(key), "{key} / {marker}");
            assert!(marker.starts_with("redquorum-harness:wait:"));
        }
        // A whole key with a brace in it cannot be a tag: said, not guessed.
        for key in ["a}b", "x{}y"] {
            assert!(marker_for(key).is_err(), "{key}");
        }
    }
}
