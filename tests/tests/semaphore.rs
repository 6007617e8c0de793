//! The counting semaphore on real nodes: never more than K holders (under
//! contention, with a node killed, with nodes that disagree), permits
//! exclude other lock kinds, carry increasing fencing tokens, and a waiter
//! is woken by a release.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{LANDS_WITHIN, cluster, eventually, node_ms, redlock};
use redquorum::{Error, LockOptions};
use tokio::sync::Mutex;

/// The largest number of `(from, to)` intervals that overlap at one instant.
fn most_at_once(holds: &[(Instant, Instant, usize)]) -> usize {
    holds
        .iter()
        .map(|(from, _, _)| {
            holds
                .iter()
                .filter(|(a, b, _)| a <= from && from < b)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test]
async fn never_more_than_k_holders_under_contention_with_a_node_killed() {
    const K: usize = 3;
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let semaphore = redlock.semaphore("encoders", K).unwrap();
    let holds = Arc::new(Mutex::new(Vec::new()));
    let workers = (0..10).map(|worker| {
        let (semaphore, holds) = (semaphore.clone(), Arc::clone(&holds));
        async move {
            for round in 0..4 {
                let permit = semaphore.acquire().await.expect("a permit");
                let from = Instant::now();
                tokio::time::sleep(Duration::from_millis(5)).await;
                let to = Instant::now();
                assert!(permit.is_valid(), "worker {worker} round {round}");
                holds.lock().await.push((from, to, permit.slot()));
                permit.release().await.expect("release");
            }
        }
    });
    // A node dies once a quarter of the holds are done (bounded wait).
    let killer = async {
        let started = Instant::now();
        while holds.lock().await.len() < 10 && started.elapsed() < Duration::from_secs(30) {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        nodes.kill(0).unwrap();
        Instant::now()
    };
    let (_, killed_at) = tokio::join!(futures::future::join_all(workers), killer);
    let holds = holds.lock().await;
    assert_eq!(holds.len(), 40);
    let after_the_kill = holds
        .iter()
        .filter(|(from, _, _)| *from > killed_at)
        .count();
    assert!(
        after_the_kill > 0,
        "no permit was held after the node died: it proved nothing"
    );
    let at_once = most_at_once(&holds);
    assert!(at_once <= K, "{at_once} holders at once");
    assert!(
        at_once >= 2,
        "the workload never overlapped: it proved nothing"
    );
    // Overlapping holders never share a slot.
    common::assert_no_conflicting_overlap(&holds, |a, b| a == b);
}

#[tokio::test]
async fn slots_held_on_a_majority_by_others_are_respected_whatever_a_minority_says() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let semaphore = redlock.semaphore("printers", 2).unwrap();
    let name_key = redlock.key("printers");
    // Another client holds slot 0 on nodes 0 and 1 (a quorum) and slot 1 on
    // node 2 only (a failed attempt it has not unwound yet). A naive count
    // would see one permit out on each node and admit two more.
    let plant = |node: usize, slot: usize, owner: &str| {
        let expiry = (node_ms(&nodes, node).unwrap() + 10_000).to_string();
        let field = format!("h:{owner}");
        let slot_key = format!("{name_key}:slot:{slot}");
        for (key, kind) in [(name_key.as_str(), "permit"), (slot_key.as_str(), "slot")] {
            nodes
                .command(node, &["HSET", key, "kind", kind, &field, &expiry])
                .unwrap();
            nodes.command(node, &["PEXPIRE", key, "10000"]).unwrap();
        }
    };
    plant(0, 0, "x");
    plant(1, 0, "x");
    plant(2, 1, "y");
    let permit = semaphore
        .try_acquire()
        .await
        .expect("slot 1 is free on a quorum");
    assert_eq!(permit.slot(), 1);
    let err = semaphore.try_acquire().await.unwrap_err();
    assert!(matches!(err, Error::Contended { .. }), "{err}");
    permit.release().await.unwrap();
}

#[tokio::test]
async fn a_name_is_one_lock_permits_exclude_other_kinds_and_the_reverse() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let semaphore = redlock.semaphore("uploads", 3).unwrap();
    let lock = redlock.try_lock("uploads").await.unwrap();
    let err = semaphore.try_acquire().await.unwrap_err();
    assert!(matches!(err, Error::Contended { .. }), "{err}");
    lock.release().await.unwrap();
    let permit = semaphore.try_acquire().await.unwrap();
    let second = semaphore.try_acquire().await.unwrap();
    for attempt in [
        redlock.try_lock("uploads").await.err(),
        redlock.try_write_lock("uploads").await.err(),
    ] {
        assert!(
            matches!(attempt, Some(Error::Contended { .. })),
            "{attempt:?}"
        );
    }
    assert_eq!(
        common::kinds(&nodes, &redlock.key("uploads")),
        vec![Some("permit".to_owned()); 3]
    );
    drop((permit, second));
}

#[tokio::test]
async fn permits_carry_increasing_tokens_extend_and_a_release_wakes_a_waiter() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(600));
    let semaphore = redlock.semaphore("builds", 1).unwrap();
    let mut first = semaphore.try_acquire().await.unwrap();
    let first_token = first.fence().await.unwrap();
    let deadline = first.deadline();
    first.auto_extend();
    let extended = eventually(LANDS_WITHIN, || async { first.deadline() > deadline }).await;
    assert!(extended, "the watchdog never extended the permit");

    let waiting = tokio::spawn({
        let semaphore = semaphore.clone();
        async move { semaphore.acquire().await }
    });
    // No one gets in while the only permit is out (and extended).
    let err = semaphore.try_acquire().await.unwrap_err();
    assert!(matches!(err, Error::Contended { .. }), "{err}");
    first.release().await.unwrap();
    let second = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("woken within the wait")
        .unwrap()
        .expect("the freed permit");
    assert!(second.fence().await.unwrap() > first_token);
    second.release().await.unwrap();
}

#[tokio::test]
async fn without_a_majority_no_permit_is_granted_and_none_is_left_behind() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let semaphore = redlock.semaphore("jobs", 2).unwrap();
    nodes.kill(1).unwrap();
    nodes.kill(2).unwrap();
    let err = semaphore.try_acquire().await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    let name_key = redlock.key("jobs");
    assert_eq!(
        common::kinds(&nodes, &name_key)[0],
        None,
        "the failed permit was not unwound"
    );
    for slot in 0..2 {
        assert_eq!(
            common::kinds(&nodes, &format!("{name_key}:slot:{slot}"))[0],
            None
        );
    }
    let impatient = redlock
        .with_options(&LockOptions {
            wait: Duration::from_millis(200),
            ..*redlock.options()
        })
        .unwrap();
    let err = impatient
        .semaphore("jobs", 2)
        .unwrap()
        .acquire()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::WaitTimeout { .. }), "{err}");
    assert!(matches!(
        redlock.semaphore("jobs", 0),
        Err(Error::ZeroPermits { .. })
    ));
}
