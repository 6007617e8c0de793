//! Failovers a client's slot map does not show: a cluster master's shard
//! primary failed over away and back between two map reads (it is the
//! primary in both, but was promoted again in between, without the holds
//! its replacement granted), and a client whose first slot map read failed
//! (its first map comes later, after failovers it never saw). Each is
//! refused for the longest lease (`Ineligible::NewPrimary`).

mod common;

use std::time::Duration;

use redquorum::{Ineligible, NodeOutcome, Redlock};
use redquorum_harness::{ShardedCluster, slot_of};

/// The max TTL of the clients here (3 s leases).
const MAX_TTL: Duration = Duration::from_secs(4);

/// A client of `masters` with 3 s leases, a 4 s max TTL, and slot maps
/// (and probes) read every `interval`.
fn client(masters: &ShardedCluster, interval: Duration) -> Redlock {
    Redlock::builder()
        .nodes(masters.urls())
        .ttl(Duration::from_secs(3))
        .max_ttl(MAX_TTL)
        .node_timeout(Duration::from_millis(500))
        .health_check_interval(interval)
        .build()
        .unwrap()
}

/// Locks and releases `name` until it is granted (the client has read a
/// slot map with every shard primary voting), or panics.
async fn warm(redlock: &Redlock, name: &str) {
    let warm = common::eventually(MAX_TTL + Duration::from_secs(4), || async {
        match redlock.try_lock(name).await {
            Ok(lock) => lock.release().await.is_ok(),
            Err(_) => false,
        }
    })
    .await;
    assert!(warm, "{name}: {:?}", redlock.health().await);
}

/// How many of `outcomes` are new-primary refusals.
fn new_primaries(outcomes: &redquorum::Outcomes) -> usize {
    outcomes
        .iter()
        .filter(|(_, o)| matches!(o, NodeOutcome::Refused(Ineligible::NewPrimary { .. })))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_failed_over_away_and_back_between_two_maps_does_not_vote() {
    let masters = ShardedCluster::start(3, 1, 1).unwrap();
    let holder = client(&masters, Duration::from_secs(5));
    // The rival reads a slot map only every minute: between two of its
    // reads, masters 0 and 1 fail over twice.
    let rival = client(&masters, Duration::from_secs(60));
    warm(&holder, "warm").await;
    warm(&rival, "warm").await;
    let first_primaries: Vec<usize> = (0..2).map(|m| masters.primary_index(m, 0)).collect();

    // A clean failover: the replicas take over, the old primaries follow.
    for m in 0..2 {
        masters.failover(m, 0).unwrap();
    }
    // The holder finds the new primaries (and waits out their refusal).
    warm(&holder, "warm").await;
    // Back: the old primaries take over again, while lagging: the hold
    // written meanwhile is lost on masters 0 and 1, kept on master 2.
    let runtime = tokio::runtime::Handle::current();
    let lock = masters
        .failover_lagging(0, 0, || {
            masters.failover_lagging(1, 0, || {
                tokio::task::block_in_place(|| runtime.block_on(holder.try_lock("back")))
            })
        })
        .unwrap()
        .unwrap()
        .unwrap();
    let now_primaries: Vec<usize> = (0..2).map(|m| masters.primary_index(m, 0)).collect();
    assert_eq!(now_primaries, first_primaries, "failed over and back");
    let key = holder.key("back");
    for m in 0..2 {
        let held = masters.command_for_key(m, &key, &["EXISTS", &key]).unwrap();
        assert_eq!(held.as_int(), Some(0), "master {m} lost the hold");
    }
    assert_eq!(masters.shard_of_slot(2, slot_of(&key)), 0);

    // The rival's map names the same primaries as before: only their
    // promotion in between tells that they may lack holds.
    let err = match rival.try_lock("back").await {
        Ok(_) => panic!("two holders: a primary promoted again since the last map voted"),
        Err(err) => err,
    };
    let outcomes = err.outcomes().expect("per-node outcomes");
    // The early decision may come before the second refusal is read.
    assert!(new_primaries(outcomes) >= 1, "{err:?}");
    drop(lock);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_slot_map_read_after_the_first_call_trusts_no_primary_at_once() {
    let masters = ShardedCluster::start(3, 1, 0).unwrap();
    // Master 0 answers nothing at the first call: its first map read fails.
    let stopped = masters.primary_index(0, 0);
    masters.master(0).pause(stopped).unwrap();
    let redlock = Redlock::builder()
        .nodes(masters.urls())
        .ttl(Duration::from_secs(3))
        .max_ttl(MAX_TTL)
        .node_timeout(Duration::from_millis(300))
        .health_check_interval(Duration::from_millis(300))
        .build()
        .unwrap();
    // Granted by masters 1 and 2 once they are older than the max TTL.
    warm(&redlock, "first").await;
    // Its first map read ends, failed (it waits out the node timeouts).
    let failed = common::eventually(Duration::from_secs(10), || async {
        redlock.health().await[0].1.down().is_some()
    })
    .await;
    assert!(failed, "{:?}", redlock.health().await);

    // It comes back (it may have failed over meanwhile, for all the client
    // knows): its primaries are not trusted at once, as a first map's are.
    masters.master(0).resume(stopped).unwrap();
    let read = common::eventually(Duration::from_secs(5), || async {
        redlock.health().await[0].1.down().is_none()
    })
    .await;
    let health = redlock.health().await;
    assert!(read, "{health:?}");
    assert!(
        matches!(health[0].1.refusal(), Some(Ineligible::NewPrimary { .. })),
        "{health:?}"
    );
    // After the longest lease it votes.
    let votes = common::eventually(MAX_TTL + Duration::from_secs(2), || async {
        redlock.health().await[0].1.refusal().is_none()
    })
    .await;
    assert!(votes, "{:?}", redlock.health().await);
}
