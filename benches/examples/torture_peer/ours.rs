//! redquorum's plain lock under the same torture as the peer, built as
//! `redquorum torture --kind plain` builds it
//! (`crates/redquorum-cli/src/cmd/torture/lock.rs`, which the CLI binary
//! keeps to itself): the run's TTL, `wait` = `ttl / 2`, the 100 ms node
//! timeout, 5 ms retry delay with 20 ms jitter, the run's key prefix, and
//! the delayed-restart rule (`max_ttl`) whenever the nemesis kills nodes.

use std::time::Duration;

use redquorum::Redlock;
use redquorum_benches::{LockKind, MixedLocker, wait_for_votes};
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
        let redlock = redlock(plan, urls, prefix)?;
        if plan.delayed_restart() {
            // Fresh nodes vote only once up for max_ttl: start then.
            wait_for_votes(&redlock, plan.ttl + Duration::from_secs(5)).await;
        }
        Ok(())
    }

    fn locker(plan: &TorturePlan<Self>, _: usize, urls: Vec<String>, prefix: &str) -> MixedLocker {
        let redlock = redlock(plan, urls, prefix).expect("the same configuration was built above");
        MixedLocker::single(redlock, LockKind::Plain, plan.resource_names())
    }
}

/// The lock every client group uses, on `urls`, its keys under `prefix`.
fn redlock(plan: &TorturePlan<Ours>, urls: Vec<String>, prefix: &str) -> Result<Redlock, String> {
    let builder = Redlock::builder()
        .nodes(urls)
        .ttl(plan.ttl)
        .wait(plan.ttl / 2)
        .node_timeout(plan.node_timeout)
        .retry_delay(Duration::from_millis(5))
        .retry_jitter(Duration::from_millis(20))
        .key_prefix(prefix.to_owned());
    // A kill -9 of an AOF-everysec node can lose an acknowledged hold: the
    // library then keeps a restarted node out of quorums for max_ttl.
    let builder = if plan.delayed_restart() {
        builder.max_ttl(plan.ttl)
    } else {
        builder
    };
    builder.build().map_err(|e| e.to_string())
}
