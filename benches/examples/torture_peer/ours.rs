//! redquorum's plain lock under the same torture as the peer, built as
//! `redquorum torture --kind plain` builds it (`redquorum_adapter::torture_redlock`:
//! the run's TTL, `wait` = `ttl / 2`, its node timeout, 5 ms retry delay
//! with 20 ms jitter, the run's key prefix, and the delayed-restart rule
//! (`max_ttl`) whenever the nemesis kills nodes).

use std::time::Duration;

use redquorum_adapter::{LockKind, MixedLocker, torture_redlock, wait_for_votes};
use redquorum_harness::{NoOperator, TortureLock, TorturePlan};

/// redquorum's plain lock as the lock under torture.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ours;

impl TortureLock for Ours {
    type Locker = MixedLocker;
    type Operator = NoOperator;

    fn name(&self) -> String {
        LockKind::Plain.name().to_owned()
    }

    async fn prepare(
        plan: &TorturePlan<Self>,
        urls: Vec<String>,
        prefix: &str,
    ) -> Result<(), String> {
        let redlock = torture_redlock(plan, urls, prefix)?;
        if plan.delayed_restart() {
            // Fresh nodes vote only once up for max_ttl: start then.
            wait_for_votes(&redlock, plan.ttl + Duration::from_secs(5)).await;
        }
        Ok(())
    }

    fn locker(plan: &TorturePlan<Self>, _: usize, urls: Vec<String>, prefix: &str) -> MixedLocker {
        let redlock =
            torture_redlock(plan, urls, prefix).expect("the same configuration was built above");
        MixedLocker::single(redlock, LockKind::Plain, plan.resource_names())
    }
}
