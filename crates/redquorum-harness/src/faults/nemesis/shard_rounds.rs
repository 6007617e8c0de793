//! The nemesis's loop on cluster masters: after a random quiet gap, one
//! fault of cluster masters ([`FaultKind::CLUSTER`]) at random, on a
//! random set of masters (1 to N for a migration or a clean failover:
//! a migration loses nothing, and the lock refuses a new primary's votes for
//! the longest lease; `min_nodes` to `max_nodes` for a lagging failover,
//! `max_nodes` half the time),
//! struck and healed (`shard_strike.rs`), then logged with its start and
//! end on the history's clock. Kinds that cannot strike here (those that
//! address a single server, a migration with one shard, failovers without
//! replicas) are logged as skipped once, up front.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::nemesis_config::NemesisConfig;
use super::shard_strike::ShardStriker;
use super::strike::{SHORT, nap};
use crate::faults::fault_log::{FaultEvent, FaultLog};
use crate::faults::kind::FaultKind;
use crate::nodes::ShardedCluster;

/// Strikes until `stop`, then returns what was done.
pub(super) fn run(sharded: &ShardedCluster, config: &NemesisConfig, stop: &AtomicBool) -> FaultLog {
    let epoch = config.epoch.unwrap_or_else(Instant::now);
    let mut log = FaultLog::default();
    let mut kinds = Vec::new();
    for &kind in &config.kinds {
        match why_not(kind, sharded.shards(), sharded.replicas()) {
            None => kinds.push(kind),
            Some(why) => log.errors.push(format!("{} skipped: {why}", kind.name())),
        }
    }
    let masters = config.targets_among(sharded.len());
    if kinds.is_empty() || masters.is_empty() {
        return log;
    }
    let mut striker = ShardStriker::new(sharded, config, stop, StdRng::seed_from_u64(config.seed));
    while nap(striker.rng.gen_range(config.gaps()), stop) {
        let kind = kinds[striker.rng.gen_range(0..kinds.len())];
        let targets = targets(&mut striker.rng, kind, &masters, config);
        let length = striker.rng.gen_range(SHORT..=config.max_fault.max(SHORT));
        let started = epoch.elapsed();
        let struck = striker.strike(kind, &targets, length);
        let name = kind.name();
        log.errors
            .extend(struck.errors.iter().map(|e| format!("{name}: {e}")));
        if !struck.targets.is_empty() {
            log.record(
                FaultEvent::new(kind, struck.targets, started, epoch.elapsed())
                    .with_detail(struck.detail),
            );
        }
    }
    log
}

/// Why `kind` cannot strike masters of `shards` shards with `replicas`
/// replicas each, if it cannot.
fn why_not(kind: FaultKind, shards: usize, replicas: usize) -> Option<&'static str> {
    if !kind.needs_cluster() {
        Some("it addresses a single server, not a cluster master")
    } else if kind == FaultKind::Migrate && shards < 2 {
        Some("one shard per master: no other shard to move a slot to")
    } else if kind != FaultKind::Migrate && replicas == 0 {
        Some("the shards have no replica to promote")
    } else {
        None
    }
}

/// A random set of distinct masters from `pool`, sorted: any number for a
/// migration or a clean failover (the new-primary rule covers what a
/// failover may lose), `min_nodes` to
/// `max_nodes` for a lagging failover, `max_nodes` half the time.
fn targets(
    rng: &mut StdRng,
    kind: FaultKind,
    pool: &[usize],
    config: &NemesisConfig,
) -> Vec<usize> {
    let (least, most) = if kind == FaultKind::LaggingFailover {
        let most = config.max_nodes.clamp(1, pool.len());
        (config.min_nodes.clamp(1, most), most)
    } else {
        (1, pool.len())
    };
    // Half the lagging failovers strike the most masters (a majority by
    // default): only holds lost on a majority let a quorum form without
    // them, which is what the new-primary rule must stop.
    let widest = kind == FaultKind::LaggingFailover && rng.gen_bool(0.5);
    let count = if widest {
        most
    } else {
        rng.gen_range(least..=most)
    };
    let mut targets: Vec<usize> = rand::seq::index::sample(rng, pool.len(), count)
        .into_iter()
        .map(|i| pool[i])
        .collect();
    targets.sort_unstable();
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lagging_failovers_keep_to_their_bounds_and_the_others_reach_every_master() {
        let config = NemesisConfig {
            min_nodes: 2,
            max_nodes: 3,
            ..NemesisConfig::default()
        };
        let pool = [0, 1, 2, 3, 4];
        let mut rng = StdRng::seed_from_u64(5);
        let (mut widest, mut majorities) = (0, 0);
        for _ in 0..300 {
            let lagging = targets(&mut rng, FaultKind::LaggingFailover, &pool, &config);
            assert!((2..=3).contains(&lagging.len()), "{lagging:?}");
            majorities += usize::from(lagging.len() == 3);
            assert!(lagging.windows(2).all(|w| w[0] < w[1]), "sorted, distinct");
            let migrate = targets(&mut rng, FaultKind::Migrate, &pool, &config);
            assert!(!migrate.is_empty());
            widest = widest.max(migrate.len());
        }
        assert_eq!(widest, 5, "a migration may strike every master");
        // Half always, plus the uniform draw's share of the rest: 3/4.
        assert!((180..=270).contains(&majorities), "{majorities} of 300");
        // Bounds past the pool are clamped to it.
        let wide = NemesisConfig {
            min_nodes: 9,
            max_nodes: 9,
            ..NemesisConfig::default()
        };
        assert_eq!(
            targets(&mut rng, FaultKind::LaggingFailover, &[3, 7], &wide),
            [3, 7]
        );
    }

    #[test]
    fn kinds_that_cannot_strike_say_why() {
        assert_eq!(why_not(FaultKind::Migrate, 2, 1), None);
        assert_eq!(why_not(FaultKind::LaggingFailover, 1, 1), None);
        assert!(why_not(FaultKind::Kill, 2, 1).is_some());
        assert!(why_not(FaultKind::Migrate, 1, 1).is_some());
        assert!(why_not(FaultKind::Failover, 2, 0).is_some());
    }
}
