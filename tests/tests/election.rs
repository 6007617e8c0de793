//! Leader election on real nodes: one leader at a time, increasing epochs,
//! observers that see every change, and a leader that vanishes or is cut
//! off.

mod common;

use std::pin::pin;
use std::time::Duration;

use common::{cluster, redlock};
use futures::StreamExt;
use redquorum::{Error, Leader, LostReason};

async fn next_leader<S>(leaders: &mut S) -> Option<Leader>
where
    S: futures::Stream<Item = Result<Option<Leader>, Error>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(5), leaders.next())
        .await
        .expect("an observer is woken within 5 s")
        .expect("the stream goes on")
        .expect("a quorum was read")
}

#[tokio::test]
async fn one_leader_at_a_time_epochs_increase_and_observers_see_each_change() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let election = redlock.election("scheduler").unwrap();
    let mut leaders = pin!(election.observe());
    assert_eq!(next_leader(&mut leaders).await, None);

    let first = election.campaign("host-a").await.unwrap();
    let contender = tokio::spawn({
        let election = election.clone();
        async move { election.campaign("host-b").await }
    });
    assert_eq!(next_leader(&mut leaders).await.unwrap().value(), "host-a");
    let err = election.try_campaign("host-c").await.unwrap_err();
    assert!(matches!(err, Error::Contended { .. }), "{err}");
    // A plain lock on the name is excluded too: one name, one lock.
    assert!(matches!(
        redlock.try_lock("scheduler").await,
        Err(Error::Contended { .. })
    ));

    first.proclaim("host-a, ready").await.unwrap();
    assert_eq!(
        next_leader(&mut leaders).await.unwrap().value(),
        "host-a, ready"
    );
    let first_epoch = first.epoch().await.unwrap();
    first.resign().await.unwrap();

    let second = tokio::time::timeout(Duration::from_secs(5), contender)
        .await
        .expect("the contender is woken by the resignation")
        .unwrap()
        .unwrap();
    // The observer may see "no leader" between the two; it ends on host-b.
    let mut seen = next_leader(&mut leaders).await;
    if seen.is_none() {
        seen = next_leader(&mut leaders).await;
    }
    let seen = seen.expect("host-b leads");
    assert_eq!(seen.value(), "host-b");
    assert_eq!(seen.token(), second.owner().to_string());
    assert!(second.epoch().await.unwrap() > first_epoch);
    second.resign().await.unwrap();
    assert_eq!(next_leader(&mut leaders).await, None);
}

#[tokio::test]
async fn a_vanished_leader_is_replaced_after_its_lease_with_a_greater_epoch() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(500));
    let election = redlock.election("primary").unwrap();
    let gone = election.try_campaign("crashed").await.unwrap();
    let stale_epoch = gone.epoch().await.unwrap();
    // The process "crashes": no release, no more extensions.
    gone.forget();
    let mut leaders = pin!(election.observe());
    assert_eq!(next_leader(&mut leaders).await.unwrap().value(), "crashed");
    let next = tokio::time::timeout(Duration::from_secs(5), election.campaign("standby"))
        .await
        .expect("elected once the lease ran out")
        .unwrap();
    assert!(next.epoch().await.unwrap() > stale_epoch);
    let mut seen = next_leader(&mut leaders).await;
    if seen.is_none() {
        seen = next_leader(&mut leaders).await; // polled: the expiry, then the new leader
    }
    assert_eq!(seen.unwrap().value(), "standby");
    next.resign().await.unwrap();
}

#[tokio::test]
async fn a_leader_cut_off_from_a_majority_loses_its_lease_and_cannot_proclaim() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(800));
    let election = redlock.election("writer").unwrap();
    let leadership = election.campaign("alone").await.unwrap();
    let lease = leadership.lease();
    nodes.kill(1).unwrap();
    nodes.kill(2).unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(5), lease.lost())
        .await
        .expect("the watchdog gives the lease up by its deadline");
    assert_ne!(reason, LostReason::Released);
    let err = leadership.proclaim("still me?").await.unwrap_err();
    assert!(matches!(err, Error::Lost { .. }), "{err}");
    let err = election.leader().await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
}

#[tokio::test]
async fn news_of_a_new_leader_or_value_reach_observers_only() {
    // A waiting campaigner is woken by a release only; a new leader or a
    // new value frees nothing for it. Those are announced on the name's
    // news channel, which only observers subscribe to, so a process of
    // campaigners is not sent them at all.
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let election = redlock.election("news").unwrap();
    let key = redlock.key("news");
    let news = format!("{key}:news");
    let leader = election.campaign("host-a").await.unwrap();
    let waiting = tokio::spawn({
        let election = election.clone();
        async move { election.campaign("host-b").await }
    });
    assert!(
        common::eventually(Duration::from_secs(5), || async {
            (0..3).all(|i| common::subscribers(&nodes, i, &key) == 1)
        })
        .await,
        "the campaigner never subscribed to the release channel"
    );
    assert!((0..3).all(|i| common::subscribers(&nodes, i, &news) == 0));
    let mut leaders = pin!(election.observe());
    assert_eq!(next_leader(&mut leaders).await.unwrap().value(), "host-a");
    // Subscribing returns at a quorum; the last node's may be on its way.
    assert!(
        common::eventually(Duration::from_secs(5), || async {
            (0..3).all(|i| common::subscribers(&nodes, i, &news) == 1)
        })
        .await,
        "the observer never subscribed to the news channel on every node"
    );
    leader.proclaim("host-a, ready").await.unwrap();
    assert_eq!(
        next_leader(&mut leaders).await.unwrap().value(),
        "host-a, ready"
    );
    leader.resign().await.unwrap();
    let second = waiting.await.unwrap().unwrap();
    assert_eq!(next_leader(&mut leaders).await.unwrap().value(), "host-b");
    second.resign().await.unwrap();
}

/// An observer reads the leader's epoch (the token its writes carry, so the
/// observer can fence with it too), and a later leader's is above it even
/// when a majority of the nodes restarted empty between the two campaigns:
/// their fence counters are gone, and their clocks floor the next proposal.
#[tokio::test]
async fn an_observer_reads_the_leaders_epoch_and_the_next_is_greater_after_a_majority_restarts_empty()
 {
    let nodes = cluster(3); // no persistence: a restarted node has no keys
    let redlock = redlock(&nodes, Duration::from_secs(2));
    let election = redlock.election("writer").unwrap();
    let first = election.campaign("db-a").await.unwrap();
    // Until the leader takes its epoch there is none to fence with.
    let seen = election.leader().await.unwrap().expect("db-a leads");
    assert_eq!(seen.epoch(), None);
    let first_epoch = first.epoch().await.unwrap();
    let seen = election.leader().await.unwrap().expect("db-a leads");
    assert_eq!((seen.value(), seen.epoch()), ("db-a", Some(first_epoch)));
    first.resign().await.unwrap();

    let fence_key = format!("{}:fence", redlock.key("writer"));
    for i in [0, 1] {
        nodes.restart(i).unwrap();
        let exists = nodes.command(i, &["EXISTS", &fence_key]).unwrap();
        assert_eq!(exists.as_int(), Some(0), "node {i} kept its fence counter");
    }
    let second = tokio::time::timeout(Duration::from_secs(10), election.campaign("db-b"))
        .await
        .expect("elected once the client reconnected")
        .unwrap();
    let second_epoch = second.epoch().await.unwrap();
    assert!(
        second_epoch > first_epoch,
        "{second_epoch} after {first_epoch}"
    );
    let seen = election.leader().await.unwrap().expect("db-b leads");
    assert_eq!((seen.value(), seen.epoch()), ("db-b", Some(second_epoch)));
    second.resign().await.unwrap();
}
