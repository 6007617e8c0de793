//! Which shards of which cluster masters took over their slots lately (a
//! failover promoted their replica), so that the nemesis moves none of
//! their slots away for the lock's longest lease.
//!
//! Why: a promoted replica may lack holds its old primary granted (all of
//! them, after a lagging failover), and the lock refuses its votes for the
//! longest lease, per server. A slot migrated from it to a shard whose
//! primary is older carries the missing holds' absence to a server whose
//! votes count at once: the master then votes as if it had never granted
//! them, and a second holder gets in (a torture control run found exactly
//! that, docs/torture.md). Until the lock refuses such slots too, the
//! nemesis leaves them where they are until every hold they may lack has
//! expired.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// When each (master, shard) last took over its slots.
#[derive(Debug)]
pub(super) struct Promotions {
    at: HashMap<(usize, usize), Instant>,
    /// How long a promoted shard keeps its slots: the longest lease, plus
    /// a tenth for the clocks' drift and the harness's own timing.
    keep: Duration,
}

impl Promotions {
    /// Promotions kept for `longest_lease` (and a tenth).
    pub(super) fn new(longest_lease: Duration) -> Self {
        Self {
            at: HashMap::new(),
            keep: longest_lease + longest_lease / 10,
        }
    }

    /// Shard `shard` of master `master` took over its slots now.
    pub(super) fn record(&mut self, master: usize, shard: usize) {
        self.at.insert((master, shard), Instant::now());
    }

    /// Whether shard `shard` of master `master` took over its slots less
    /// than the longest lease ago: its slots stay where they are.
    pub(super) fn keeps_slots(&self, master: usize, shard: usize) -> bool {
        self.at
            .get(&(master, shard))
            .is_some_and(|at| at.elapsed() < self.keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_promoted_shard_keeps_its_slots_for_the_longest_lease_only() {
        let mut lasting = Promotions::new(Duration::from_secs(60));
        assert!(!lasting.keeps_slots(0, 1), "never promoted");
        lasting.record(0, 1);
        assert!(lasting.keeps_slots(0, 1));
        assert!(!lasting.keeps_slots(1, 1) && !lasting.keeps_slots(0, 0));
        let mut brief = Promotions::new(Duration::ZERO);
        brief.record(2, 0);
        assert!(!brief.keeps_slots(2, 0), "a zero lease keeps nothing");
    }
}
