//! The lock under torture: the library, built the way every client of a
//! run builds it (`Redlock` through the group's fault proxies, with the
//! run's TTL, node timeout, lock-delay and the delayed-restart rule; in the
//! default run each group its own way, `torture/population.rs`), and
//! driven through the benchmarks' adapter (`redquorum_benches::MixedLocker`:
//! one kind, or every kind at once on the same names). The harness composes
//! the run around it (`redquorum_harness::TorturePlan::execute`).

use std::time::Duration;

use redquorum::{LockOptions, Redlock};
use redquorum_benches::{LockKind, MixedLocker, wait_for_votes};
use redquorum_harness::{TortureLock, TorturePlan};

use super::exec_holder::ExecHolder;
use super::group_locker::GroupLocker;
use super::operator::Operator;
use super::population::{self, Setup};

/// Which of the library's locks the clients take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lock {
    /// Every kind at once on the same names (the mixed workload).
    Mixed,
    /// One kind, each hold exclusive on its resource.
    One(LockKind),
}

/// A torture run of the library.
pub(crate) type Plan = TorturePlan<Lock>;

impl TortureLock for Lock {
    type Locker = GroupLocker;
    type Operator = Operator;

    fn name(&self) -> String {
        match self {
            Lock::Mixed => "mixed",
            Lock::One(kind) => kind.name(),
        }
        .to_owned()
    }

    async fn prepare(plan: &Plan, urls: Vec<String>, prefix: &str) -> Result<(), String> {
        // A population's setups each build (and so check) here; the one with
        // the longest max_ttl waits for the fresh nodes.
        let redlock = if population::runs(plan) {
            for setup in population::SETUPS {
                setup.redlock(plan, urls.clone(), prefix)?;
            }
            Setup::OwnerInfo.redlock(plan, urls, prefix)?
        } else {
            redlock(plan, urls, prefix)?
        };
        if plan.delayed_restart() || population::runs(plan) {
            // Fresh nodes vote only once up for max_ttl: start the clock then,
            // not while every attempt is refused.
            wait_for_votes(
                &redlock,
                plan.ttl * 2 + plan.lock_delay + Duration::from_secs(5),
            )
            .await;
        }
        Ok(())
    }

    fn locker(plan: &Plan, group: usize, urls: Vec<String>, prefix: &str) -> GroupLocker {
        let exec = exec_group(plan, group).then(|| {
            // Its refusals cover the longest lease of any client, as every
            // group's do (`population.rs`).
            let longest = population::longest_lease(plan);
            let max_ttl = plan.delayed_restart().then_some(longest + plan.lock_delay);
            let seed = plan.seed.wrapping_add(group as u64);
            ExecHolder::new(&urls, prefix, plan.ttl, max_ttl, seed, group)
        });
        let redlock = match Setup::of(plan, group) {
            Some(setup) => setup.redlock(plan, urls, prefix),
            None => redlock(plan, urls, prefix),
        }
        .expect("the same configuration was built above");
        let resources = plan.resource_names();
        let library = match plan.lock {
            Lock::One(kind) => MixedLocker::single(redlock, kind, resources),
            Lock::Mixed => {
                MixedLocker::new(redlock, resources, plan.seed.wrapping_add(group as u64))
            }
        };
        GroupLocker { library, exec }
    }

    fn configuration(plan: &Plan, group: usize) -> String {
        Setup::of(plan, group).map_or(String::new(), |setup| setup.label(plan))
    }

    fn operator(plan: &Plan, urls: Vec<String>, prefix: &str) -> Result<Operator, String> {
        redlock(plan, urls, prefix).map(Operator)
    }
}

/// Whether `group` is the default run's exec group (the last group, on
/// single servers): its clients lock through `redquorum exec` now and then.
/// Not in a focused run (`--kind`). With a lock-delay too: `exec` sets
/// none on its own holds, but its acquires honour the blocks the other
/// clients' vanished holds leave, which the lock-delay rule checks (its
/// own holds are extended out of sight and never judged vanished). Not on
/// cluster masters: every `exec` is a fresh process, which trusts the
/// first slot map it reads, so it counts a replica the nemesis promoted
/// less than the longest lease before, lost holds and all, which the
/// library documents as outside its assumptions (docs/operations.md: a
/// client started within the longest lease after a failover waits that
/// long first), and the nemesis fails shards over every second or so.
pub(crate) fn exec_group(plan: &Plan, group: usize) -> bool {
    plan.lock == Lock::Mixed && plan.cluster_shards.is_none() && group + 1 == plan.groups.max(1)
}

/// The lock every client of the run uses when its groups are alike (not
/// a population), on `urls`, its keys under `prefix`.
fn redlock(plan: &Plan, urls: Vec<String>, prefix: &str) -> Result<Redlock, String> {
    let builder = Redlock::builder()
        .nodes(urls)
        .ttl(plan.ttl)
        .wait(plan.ttl / 2)
        .node_timeout(plan.node_timeout)
        .retry_delay(Duration::from_millis(5))
        .retry_jitter(Duration::from_millis(20))
        .key_prefix(prefix.to_owned());
    // Local nodes run AOF everysec and the nemesis kills them. Redis then
    // acknowledges a write it has not written while a background fsync is
    // slow (it postpones the write up to 2 s), so a kill -9 on a busy disk
    // can lose a granted hold (the first soak on the one engine found an
    // overlap that way). Assumption (c) then needs the delayed-restart
    // rule, which the lock enforces itself with `max_ttl`.
    // With a lock-delay a lost hold blocks for the TTL plus the delay.
    let builder = if plan.delayed_restart() {
        builder.max_ttl(plan.ttl + plan.lock_delay)
    } else {
        builder
    };
    // A fast node is found by comparing two probes of its clock: with a
    // probe every tenth of the TTL each client's handle refuses it from
    // its second probe on, before a hold it granted at the start can
    // expire early (after TTL / rate, for a rate below 5).
    let builder = if plan.fast_node.is_some() {
        builder.health_check_interval(plan.ttl / 10)
    } else {
        builder
    };
    let redlock = builder.build().map_err(|e| e.to_string())?;
    redlock
        .with_options(&LockOptions {
            lock_delay: plan.lock_delay,
            ..*redlock.options()
        })
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use redquorum_harness::{Cluster, FaultKind, Persistence};

    use super::*;

    fn plan(kinds: Vec<FaultKind>, given: Vec<String>) -> Plan {
        Plan {
            given,
            node_count: 3,
            // Longer than this test's nodes have been up.
            ttl: Duration::from_secs(30),
            kinds,
            ..Plan::new(Lock::One(LockKind::Plain))
        }
    }

    /// AOF everysec can lose an acknowledged write to a kill -9 on a busy
    /// disk, so with the kill nemesis on local nodes the lock must not count
    /// a node that has been up for less than the TTL; without kills, or on
    /// given nodes, it counts them at once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_kills_on_local_nodes_a_node_up_less_than_the_ttl_does_not_vote() {
        let cluster = Cluster::builder(3)
            .persistence(Persistence::AofEverySec)
            .start()
            .expect("nodes");
        let killing = plan(vec![FaultKind::Kill, FaultKind::Stall], Vec::new());
        let refused = redlock(&killing, cluster.urls(), "t:k:").unwrap();
        assert!(refused.try_lock("r").await.is_err());
        let calm = plan(vec![FaultKind::Stall], Vec::new());
        let counted = redlock(&calm, cluster.urls(), "t:c:").unwrap();
        counted
            .try_lock("r")
            .await
            .expect("fresh nodes vote")
            .forget();
        assert!(!plan(vec![FaultKind::Kill], cluster.urls()).delayed_restart());
    }
}
