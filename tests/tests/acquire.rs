//! Acquiring: mutual exclusion, contention, quorum with foreign keys, waiting.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{LANDS_WITHIN, assert_held_on, cluster, held_on, redlock, values};
use redquorum::{Error, LockOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_tasks_increment_a_shared_counter_exactly() {
    let nodes = cluster(5);
    let store = Arc::new(cluster(1)); // the protected value lives on a separate Redis
    store.command(0, &["SET", "counter", "0"]).unwrap();
    let redlock = redlock(&nodes, Duration::from_secs(5))
        .with_options(&LockOptions {
            ttl: Duration::from_secs(5),
            wait: Duration::from_secs(120),
            retry_delay: Duration::from_millis(2),
            retry_jitter: Duration::from_millis(10),
            ..Default::default()
        })
        .unwrap();

    let mut tasks = Vec::new();
    for _ in 0..64 {
        let redlock = redlock.clone();
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            let mut conn = store.conn(0).unwrap();
            for _ in 0..20 {
                let lock = redlock.lock("counter").await.expect("lock within the wait");
                // Non-atomic read-modify-write with a yield in the middle: an overlap loses an update.
                let value: i64 = conn
                    .command(&["GET", "counter"])
                    .unwrap()
                    .as_text()
                    .unwrap()
                    .parse()
                    .unwrap();
                tokio::task::yield_now().await;
                conn.command(&["SET", "counter", &(value + 1).to_string()])
                    .unwrap();
                assert!(lock.is_valid(), "critical section outlived its validity");
                lock.release().await.expect("release");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let counter = store
        .command(0, &["GET", "counter"])
        .unwrap()
        .as_text()
        .unwrap();
    assert_eq!(counter, "1280");
}

#[tokio::test]
async fn acquire_fails_as_contended_when_a_majority_is_taken_and_leaves_no_key_of_ours() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let key = redlock.key("r1");
    for i in 0..3 {
        common::plant_holder(&nodes, i, &key, "foreign", Duration::from_secs(60));
    }
    let err = redlock.try_lock("r1").await.unwrap_err();
    let Error::Contended { outcomes, .. } = &err else {
        panic!("expected contended, got {err:?}");
    };
    assert!(outcomes.taken() >= 2, "{outcomes}");
    // Our hold was unwound before the error returned: the two free nodes
    // hold nothing, the foreign holder is untouched.
    assert_eq!(
        held_on(&nodes, &key, "foreign"),
        3,
        "{:?}",
        values(&nodes, &key)
    );
    assert_eq!(
        common::kinds(&nodes, &key)[3..],
        [None, None],
        "{:?}",
        values(&nodes, &key)
    );
}

#[tokio::test]
async fn acquire_is_unavailable_not_contended_when_no_other_owner_holds_a_majority() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let key = redlock.key("q");
    // One stale hold of another owner, two nodes down: we get 2, the other
    // owner 1, and nobody holds a majority.
    common::plant_holder(&nodes, 0, &key, "stale", Duration::from_secs(60));
    nodes.kill(3).unwrap();
    nodes.kill(4).unwrap();
    let err = redlock.try_lock("q").await.unwrap_err();
    let Error::Unavailable { outcomes, .. } = &err else {
        panic!("expected unavailable (nobody holds a majority), got {err}");
    };
    assert_eq!((outcomes.taken(), outcomes.failed()), (1, 2), "{outcomes}");
    // Another owner on a majority is contended, nodes down or not.
    for i in 1..3 {
        common::plant_holder(&nodes, i, &key, "stale", Duration::from_secs(60));
    }
    let err = redlock.try_lock("q").await.unwrap_err();
    let Error::Contended { outcomes, .. } = &err else {
        panic!("expected contended (another owner on 3 of 5), got {err}");
    };
    assert_eq!(outcomes.taken(), 3, "{outcomes}");
}

#[tokio::test]
async fn acquire_wins_with_three_when_a_foreign_key_is_on_two_and_release_cleans_ours() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let key = redlock.key("r2");
    for i in 0..2 {
        common::plant_holder(&nodes, i, &key, "foreign", Duration::from_secs(60));
    }
    let lock = redlock
        .try_lock("r2")
        .await
        .expect("3 of 5 free is a quorum");
    // The decision can come before the last node answered; wait for its reply to land.
    let owner = lock.owner().to_string();
    assert!(
        common::eventually(LANDS_WITHIN, || async {
            held_on(&nodes, &key, &owner) == 3
        })
        .await
    );
    assert_held_on(&nodes, &lock, 3).await;
    assert!(lock.release().await.unwrap() >= 3);
    assert_eq!(
        held_on(&nodes, &key, "foreign"),
        2,
        "{:?}",
        values(&nodes, &key)
    );
    common::settles("records left", vec![None, None, None], || {
        common::kinds(&nodes, &key)[2..].to_vec()
    })
    .await;
}

#[tokio::test]
async fn try_lock_refuses_an_empty_resource_name() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(1));
    assert!(matches!(
        redlock.try_lock("").await,
        Err(Error::EmptyResource)
    ));
    assert!(matches!(redlock.lock("").await, Err(Error::EmptyResource)));
}

#[tokio::test]
async fn lock_gives_up_after_its_wait_with_the_last_attempts_outcomes() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let held = redlock.try_lock("busy").await.unwrap();
    let impatient = redlock
        .with_options(&LockOptions {
            wait: Duration::from_millis(300),
            ..*redlock.options()
        })
        .unwrap();
    let err = impatient.lock("busy").await.unwrap_err();
    let Error::WaitTimeout { waited, last, .. } = &err else {
        panic!("expected wait timeout, got {err:?}");
    };
    assert!(
        *waited >= Duration::from_millis(300),
        "gave up early: {waited:?}"
    );
    assert!(matches!(**last, Error::Contended { .. }), "{last:?}");
    let outcomes = err.outcomes().unwrap();
    assert!(outcomes.taken() >= outcomes.quorum(), "{outcomes}");
    held.release().await.unwrap();
}

#[tokio::test]
async fn a_waiter_gets_the_lock_once_the_holder_releases() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let held = redlock.try_lock("handoff").await.unwrap();
    let waiter = tokio::spawn({
        let redlock = redlock.clone();
        async move { redlock.lock("handoff").await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await; // let the waiter fail a few attempts
    assert!(!waiter.is_finished(), "waiter got a held lock");
    held.release().await.unwrap();
    let lock = waiter
        .await
        .unwrap()
        .expect("waiter acquires after release");
    assert_held_on(&nodes, &lock, 3).await;
}

#[tokio::test]
async fn with_options_refuses_a_zero_ttl() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(1));
    let err = redlock
        .with_options(&LockOptions {
            ttl: Duration::ZERO,
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(err, redquorum::BuildError::ZeroTtl));
}

/// `granted_by` names the nodes that stored the hold: not a node another
/// owner holds, nor a killed one; and exactly those nodes hold our token.
#[tokio::test]
async fn granted_by_names_the_nodes_that_stored_the_hold() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let key = redlock.key("voters");
    common::plant_holder(&nodes, 1, &key, "foreign", Duration::from_secs(60));
    nodes.kill(3).unwrap();
    let lock = redlock
        .try_lock("voters")
        .await
        .expect("3 of 5 free and up");
    let ids: Vec<_> = redlock.nodes().cloned().collect();
    let granted = lock.granted_by();
    assert_eq!(granted, [ids[0].clone(), ids[2].clone(), ids[4].clone()]);
    let owner = lock.owner().to_string();
    for (i, id) in ids.iter().enumerate().filter(|(i, _)| *i != 3) {
        assert_eq!(
            common::holds(&nodes, i, &key, &owner),
            granted.contains(id),
            "node {i}: {:?}",
            values(&nodes, &key)
        );
    }
    lock.release().await.expect("release");
}
