//! The `Redlock` of a torture run whose clients are all alike (a focused
//! run, `--kind`, and the peer comparison's redquorum side); the default
//! run's population builds each client group its own way beside it.

use std::time::Duration;

use redquorum::{LockOptions, Redlock};
use redquorum_harness::TorturePlan;

/// The lock every client of `plan` uses when its groups are alike, on
/// `urls`, its keys under `prefix`: the run's TTL, `wait` = `ttl / 2`, its
/// node timeout, 5 ms retry delay with 20 ms jitter, its lock-delay, the
/// delayed-restart rule (`max_ttl`) whenever the nemesis kills local nodes,
/// and a clock probe every tenth of the TTL with a fast node.
///
/// # Errors
///
/// The builder's error, as text (a plan the library refuses).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
/// let plan = redquorum_harness::TorturePlan::new(());
/// let redlock = redquorum_adapter::torture_redlock(&plan, cluster.urls(), "t:").unwrap();
/// assert_eq!(redlock.options().lock_delay, plan.lock_delay);
/// # }
/// ```
pub fn torture_redlock<L>(
    plan: &TorturePlan<L>,
    urls: Vec<String>,
    prefix: &str,
) -> Result<Redlock, String> {
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

    fn plan(kinds: Vec<FaultKind>, given: Vec<String>) -> TorturePlan<()> {
        TorturePlan {
            given,
            node_count: 3,
            // Longer than this test's nodes have been up.
            ttl: Duration::from_secs(30),
            kinds,
            ..TorturePlan::new(())
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
        let refused = torture_redlock(&killing, cluster.urls(), "t:k:").unwrap();
        assert!(refused.try_lock("r").await.is_err());
        let calm = plan(vec![FaultKind::Stall], Vec::new());
        let counted = torture_redlock(&calm, cluster.urls(), "t:c:").unwrap();
        counted
            .try_lock("r")
            .await
            .expect("fresh nodes vote")
            .forget();
        assert!(!plan(vec![FaultKind::Kill], cluster.urls()).delayed_restart());
    }
}
