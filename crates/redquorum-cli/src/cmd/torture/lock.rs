//! The lock under torture: the library, built the way every client of a
//! run builds it (`Redlock` through the group's fault proxies, with the
//! run's TTL, node timeout, lock-delay and the delayed-restart rule; in the
//! default run each group its own way, `torture/population.rs`), and
//! driven through the library's adapter (`redquorum_adapter::MixedLocker`:
//! one kind, or every kind at once on the same names). The harness composes
//! the run around it (`redquorum_harness::TorturePlan::execute`).

use std::time::Duration;

use redquorum_adapter::{LockKind, MixedLocker, torture_redlock, wait_for_votes};
use redquorum_harness::{TortureLock, TorturePlan};

use super::group_locker::GroupLocker;
use super::operator::Operator;
use super::outside::exec_holder::ExecHolder;
use super::outside::serve_holder::ServeHolder;
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
            torture_redlock(plan, urls, prefix)?
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
        let seed = plan.seed.wrapping_add(group as u64);
        let serve = exec_group(plan, group)
            .then(|| ServeHolder::start(&urls, prefix, plan.ttl, seed))
            .and_then(|started| started.map_err(|e| stderr_line!("torture: {e}")).ok());
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
            None => torture_redlock(plan, urls, prefix),
        }
        .expect("the same configuration was built above");
        let resources = plan.resource_names();
        let library = match plan.lock {
            Lock::One(kind) => MixedLocker::single(redlock, kind, resources),
            Lock::Mixed => {
                let mixed =
                    MixedLocker::new(redlock, resources, plan.seed.wrapping_add(group as u64));
                match Setup::of(plan, group) {
                    Some(setup) if !setup.asks_tokens() => mixed.without_tokens(),
                    _ => mixed,
                }
            }
        };
        GroupLocker {
            library,
            exec,
            serve,
        }
    }

    fn configuration(plan: &Plan, group: usize) -> String {
        Setup::of(plan, group).map_or(String::new(), |setup| setup.label(plan))
    }

    fn group_ttl(plan: &Plan, group: usize) -> Duration {
        Setup::of(plan, group).map_or(plan.ttl, |setup| setup.ttl(plan))
    }

    fn operator(plan: &Plan, urls: Vec<String>, prefix: &str) -> Result<Operator, String> {
        torture_redlock(plan, urls, prefix).map(Operator)
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
/// long first), and the nemesis fails shards over every second or so. Not
/// with a fast node (`--fast-node`) either, for the same reason: a fresh
/// process counts a node whose clock is fast from the start until its
/// second probe of that clock (docs/safety.md), and an `exec` takes its
/// hold at once, long before its second probe (5 s).
pub(crate) fn exec_group(plan: &Plan, group: usize) -> bool {
    plan.lock == Lock::Mixed
        && plan.cluster_shards.is_none()
        && plan.fast_node.is_none()
        && group + 1 == plan.groups.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the default run's last group on single servers with clocks
    /// within the allowance locks through `exec`: a fresh process cannot
    /// know a fast node or a fresh primary yet.
    #[test]
    fn the_exec_group_is_the_last_group_of_the_default_run_with_sound_clocks() {
        let mixed = Plan {
            groups: 4,
            ..Plan::new(Lock::Mixed)
        };
        assert!(exec_group(&mixed, 3) && !exec_group(&mixed, 2));
        let fast = Plan {
            fast_node: Some(3.0),
            ..mixed.clone()
        };
        assert!(!exec_group(&fast, 3));
        let sharded = Plan {
            cluster_shards: Some(2),
            ..mixed
        };
        assert!(!exec_group(&sharded, 3));
    }
}
