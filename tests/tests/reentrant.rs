//! Reentrant locks on real nodes: nested holds by one owner, other owners
//! blocked until the last hold goes, expiry of forgotten holds, node failures.

mod common;

use std::time::Duration;

use common::{LANDS_WITHIN, cluster, eventually, redlock};
use redquorum::Error;
use redquorum_harness::Cluster;

/// How many live holds the lock at `key` records on each node.
fn holds(nodes: &Cluster, key: &str) -> Vec<usize> {
    common::hold_counts(nodes, key)
}

#[tokio::test]
async fn nested_holds_keep_other_owners_out_until_the_last_is_released() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let owner = redlock.reentrant_owner();
    let other = redlock.reentrant_owner();
    let key = redlock.key("ledger");

    // A quorum decides before the last node answered; its acquire lands
    // moments later. Each hold is taken once the one before landed on every
    // node: an acquire queued behind a slow node's calls in flight is
    // dropped unsent once a quorum decided (node/batch/batcher.rs), and the
    // counts below are per node.
    let landed = |count: usize| {
        let nodes = &nodes;
        let key = &key;
        async move {
            let all = eventually(LANDS_WITHIN, || async { holds(nodes, key) == [count; 3] }).await;
            assert!(all, "{count} holds: {:?}", holds(nodes, key));
        }
    };
    let outer = owner.try_lock("ledger").await.unwrap();
    landed(1).await;
    let middle = owner.try_lock("ledger").await.unwrap();
    landed(2).await;
    let inner = owner.clone().try_lock("ledger").await.unwrap(); // a clone is the same owner
    landed(3).await;

    for (step, hold) in [inner, middle].into_iter().enumerate() {
        assert!(
            matches!(other.try_lock("ledger").await, Err(Error::Contended { .. })),
            "step {step}: another owner got in while holds remain"
        );
        assert!(hold.release().await.unwrap() >= 2, "step {step}");
    }
    common::settles("holds left", vec![1, 1, 1], || holds(&nodes, &key)).await;
    assert!(matches!(
        other.try_lock("ledger").await,
        Err(Error::Contended { .. })
    ));
    assert!(outer.release().await.unwrap() >= 2);
    common::settles("key not deleted at zero", vec![0, 0, 0], || {
        holds(&nodes, &key)
    })
    .await;
    other
        .try_lock("ledger")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_waiting_owner_gets_in_when_the_count_reaches_zero() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let owner = redlock.reentrant_owner();
    let a = owner.lock("job").await.unwrap();
    let b = owner.lock("job").await.unwrap();
    let waiter = redlock.reentrant_owner();
    let waiting = tokio::spawn(async move { waiter.lock("job").await });
    a.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "got in with one hold left");
    b.release().await.unwrap();
    let lock = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("waiter finished")
        .unwrap()
        .expect("waiter got the lock");
    lock.release().await.unwrap();
}

#[tokio::test]
async fn expiry_frees_a_forgotten_hold() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(500));
    let owner = redlock.reentrant_owner();
    owner.try_lock("crashy").await.unwrap().forget();
    owner.try_lock("crashy").await.unwrap().forget(); // a crashed holder, two holds deep
    let other = redlock.reentrant_owner();
    assert!(other.try_lock("crashy").await.is_err());
    assert!(
        eventually(Duration::from_secs(5), || async {
            match other.try_lock("crashy").await {
                Ok(lock) => lock.release().await.is_ok(),
                Err(_) => false,
            }
        })
        .await,
        "forgotten holds never expired"
    );
}

#[tokio::test]
async fn an_owner_id_handed_to_another_client_reenters() {
    let nodes = cluster(3);
    let first = redlock(&nodes, Duration::from_secs(10));
    let second = redlock(&nodes, Duration::from_secs(10)); // as if another process
    let owner = first.reentrant_owner();
    let held = owner.try_lock("shared").await.unwrap();
    let same = second.reentrant_owner_with_id(owner.id()).unwrap();
    let nested = same.try_lock("shared").await.unwrap();
    assert!(second.reentrant_owner().try_lock("shared").await.is_err());
    nested.release().await.unwrap();
    held.release().await.unwrap();
    assert!(matches!(
        second.reentrant_owner_with_id("not-hex"),
        Err(Error::InvalidOwnerId)
    ));
}

#[tokio::test]
async fn a_plain_lock_and_a_reentrant_lock_on_one_resource_exclude_each_other() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let plain = redlock.try_lock("mixed").await.unwrap();
    assert!(matches!(
        redlock.reentrant_owner().try_lock("mixed").await,
        Err(Error::Contended { .. })
    ));
    plain.release().await.unwrap();
}

#[tokio::test]
async fn nesting_works_with_a_minority_down_and_unwinds_without_a_majority() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let key = redlock.key("degraded");
    nodes.kill(0).unwrap();
    nodes.kill(1).unwrap();
    let owner = redlock.reentrant_owner();
    let outer = owner.try_lock("degraded").await.unwrap();
    let inner = owner.try_lock("degraded").await.unwrap();
    assert!(
        eventually(LANDS_WITHIN, || async {
            holds(&nodes, &key)[2..] == [2, 2, 2]
        })
        .await,
        "{:?}",
        holds(&nodes, &key)
    );
    nodes.kill(2).unwrap();
    let err = owner.try_lock("degraded").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    // The failed third hold was unwound: the two live nodes keep exactly two.
    assert_eq!(holds(&nodes, &key)[3..], [2, 2]);
    drop((outer, inner));
}

#[tokio::test]
async fn a_nested_acquire_dropped_mid_flight_leaves_only_the_outer_hold() {
    let nodes = cluster(5);
    // A long node timeout keeps the attempt in flight while three nodes are paused.
    let redlock = redquorum::Redlock::builder()
        .nodes(nodes.urls())
        .ttl(Duration::from_secs(30))
        .node_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let key = redlock.key("cancelled");
    let owner = redlock.reentrant_owner();
    let outer = owner.try_lock("cancelled").await.unwrap();
    for i in 0..3 {
        nodes.pause(i).unwrap();
    }
    let attempt =
        tokio::time::timeout(Duration::from_millis(300), owner.try_lock("cancelled")).await;
    assert!(attempt.is_err(), "the attempt should still be in flight");
    assert_eq!(
        holds(&nodes, &key)[3..],
        [2, 2],
        "the live nodes got the nested hold"
    );
    for i in 0..3 {
        nodes.resume(i).unwrap();
    }
    let unwound = eventually(Duration::from_secs(5), || async {
        holds(&nodes, &key) == [1, 1, 1, 1, 1]
    })
    .await;
    assert!(unwound, "holds after the drop: {:?}", holds(&nodes, &key));
    outer.release().await.unwrap();
}

#[tokio::test]
async fn owners_with_nested_holds_never_overlap_with_a_node_killed() {
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(2));
    // (owner, from, to) of each outermost hold, as the client saw it.
    let history = Arc::new(Mutex::new(Vec::<(usize, Instant, Instant)>::new()));
    let tasks: Vec<_> = (0..4)
        .map(|who| {
            let (owner, history) = (redlock.reentrant_owner(), Arc::clone(&history));
            tokio::spawn(async move {
                let end = Instant::now() + Duration::from_secs(2);
                while Instant::now() < end {
                    let Ok(outer) = owner.try_lock("account").await else {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    };
                    let from = Instant::now();
                    if let Ok(inner) = owner.try_lock("account").await {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        let _ = inner.release().await;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    let to = Instant::now().min(outer.deadline());
                    history.lock().unwrap().push((who, from, to));
                    let _ = outer.release().await;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;
    nodes.kill(4).unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    let history = history.lock().unwrap().clone();
    let owners: std::collections::BTreeSet<usize> = history.iter().map(|h| h.0).collect();
    assert!(owners.len() > 1, "only one owner ever held: {history:?}");
    // Holds of one owner may overlap (re-entry); of two owners, never.
    let holds: Vec<_> = history
        .iter()
        .map(|&(who, from, to)| (from, to, who))
        .collect();
    common::assert_no_conflicting_overlap(&holds, |a, b| a != b);
}

#[tokio::test]
async fn every_hold_gets_a_fence_token_and_owners_tokens_strictly_increase() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let mut last = redquorum::FenceToken::new(0);
    for round in 0..3 {
        let owner = redlock.reentrant_owner();
        let outer = owner.lock("fenced-ledger").await.unwrap();
        let inner = owner.lock("fenced-ledger").await.unwrap();
        let (a, b) = (outer.fence().await.unwrap(), inner.fence().await.unwrap());
        // Above every earlier owner's; the holds of one owner do not
        // exclude each other, so their tokens order nothing between them.
        assert!(a > last && b > last, "round {round}: {a}, {b} after {last}");
        inner.release().await.unwrap();
        outer.release().await.unwrap();
        last = a.max(b);
    }
    // The counter is the plain lock's: tokens keep rising across kinds on one name.
    let plain = redlock.lock("fenced-ledger").await.unwrap();
    assert!(plain.fence().await.unwrap() > last);
    plain.release().await.unwrap();

    let unfenced = redlock
        .with_options(&redquorum::LockOptions {
            fencing: false,
            ..*redlock.options()
        })
        .unwrap();
    let hold = unfenced
        .reentrant_owner()
        .lock("fenced-ledger")
        .await
        .unwrap();
    assert!(matches!(
        hold.fence().await,
        Err(redquorum::Error::FencingOff { .. })
    ));
    hold.release().await.unwrap();
}

#[tokio::test]
async fn no_token_is_issued_when_no_quorum_can_store_it_and_the_hold_stays() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let key = redlock.key("fence-broken");
    // Two of three nodes hold a counter the fencing operations refuse to use.
    for i in [0, 2] {
        nodes
            .command(
                i,
                &["SET", &redlock.fence_key("fence-broken"), "not-a-number"],
            )
            .unwrap();
    }
    let hold = redlock
        .reentrant_owner()
        .try_lock("fence-broken")
        .await
        .unwrap();
    let err = hold.fence().await.unwrap_err();
    assert!(matches!(err, Error::FenceUnavailable { .. }), "{err}");
    // No token, but the hold is intact until released.
    assert!(hold.is_valid());
    let everywhere = eventually(LANDS_WITHIN, || async { holds(&nodes, &key) == [1, 1, 1] }).await;
    assert!(everywhere, "{:?}", holds(&nodes, &key));
    hold.release().await.unwrap();
    common::settles("the hold was left behind", vec![0, 0, 0], || {
        holds(&nodes, &key)
    })
    .await;
}
