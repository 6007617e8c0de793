//! Node clock monitoring on real nodes: a node whose clock runs fast
//! (libfaketime) loses its vote and says why; nodes with sound clocks never
//! do, even probed often on a busy machine.

mod common;

use std::time::{Duration, Instant};

use common::{cluster, eventually};
use redquorum::{Error, Ineligible, NodeOutcome, Redlock};
use redquorum_harness::{Cluster, faketime_support};

fn redlock_probing_every(cluster: &Cluster, interval: Duration) -> Redlock {
    Redlock::builder()
        .nodes(cluster.urls())
        .ttl(Duration::from_secs(2))
        .node_timeout(Duration::from_millis(250))
        .health_check_interval(interval)
        .build()
        .expect("valid configuration")
}

#[tokio::test]
async fn a_fast_clock_node_loses_its_vote_and_status_says_why() {
    if let Err(why) = faketime_support() {
        if std::env::var_os("REDQUORUM_REQUIRE_FAKETIME").is_some() {
            panic!("REDQUORUM_REQUIRE_FAKETIME is set but {why}");
        }
        eprintln!("SKIPPED a_fast_clock_node_loses_its_vote: {why}");
        return;
    }
    let nodes = Cluster::builder(3)
        .fast_clock(2, 3.0)
        .start()
        .expect("nodes, one with a fast clock");
    let redlock = redlock_probing_every(&nodes, Duration::from_millis(100));
    let refused = eventually(Duration::from_secs(5), || async {
        let health = redlock.health().await;
        matches!(
            health[2].1.refusal(),
            Some(Ineligible::ClockUnstable { .. })
        )
    })
    .await;
    assert!(refused, "{:?}", redlock.health().await);
    let health = redlock.health().await;
    let reason = health[2].1.refusal().unwrap().to_string();
    assert!(reason.contains("clock advanced"), "{reason}");
    assert!(
        health[..2].iter().all(|(_, h)| h.refusal().is_none()),
        "{health:?}"
    );

    // Its vote no longer counts: the lock needs both sound nodes.
    let lock = redlock.try_lock("clocked").await.expect("two sound nodes");
    lock.release().await.unwrap();
    nodes.kill(1).unwrap();
    let err = redlock.try_lock("clocked").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    let refused_vote = err.outcomes().unwrap().iter().nth(2).map(|(_, o)| o);
    assert!(
        matches!(
            refused_vote,
            Some(NodeOutcome::Refused(Ineligible::ClockUnstable { .. }))
        ),
        "{err}"
    );
}

#[tokio::test]
async fn sound_clocks_are_never_refused_even_probed_every_20_ms() {
    let nodes = cluster(3);
    let redlock = redlock_probing_every(&nodes, Duration::from_millis(20));
    let lock = redlock.try_lock("steady").await.expect("granted");
    // About 75 probes per node; the machine is as busy as the suite makes it.
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        for (node, health) in redlock.health().await {
            assert!(health.refusal().is_none(), "{node}: {health}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    lock.release().await.unwrap();
}
