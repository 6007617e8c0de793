//! Locking several resources at once on real nodes: all or nothing, no
//! deadlock between overlapping sets asked in opposite orders, one token
//! above every resource's, and a minority down.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{cluster, redlock};
use redquorum::Error;
use tokio::sync::Mutex;

#[tokio::test]
async fn all_or_nothing_a_held_member_leaves_the_others_untouched() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let b = redlock.try_lock("b").await.unwrap();
    let err = redlock.try_lock_all(&["a", "b", "c"]).await.unwrap_err();
    assert!(matches!(err, Error::Contended { .. }), "{err}");
    for name in ["a", "c"] {
        assert_eq!(
            common::kinds(&nodes, &redlock.key(name)),
            [None, None, None],
            "{name}"
        );
    }
    b.release().await.unwrap();
    let all = redlock.try_lock_all(&["c", "a", "b", "a"]).await.unwrap();
    assert_eq!(all.resources(), ["a", "b", "c"]);
    for name in ["a", "b", "c"] {
        let taken = redlock.try_lock(name).await;
        assert!(
            matches!(taken, Err(Error::Contended { .. })),
            "{name} was not held"
        );
    }
    all.release().await.unwrap();
    for name in ["a", "b", "c"] {
        let key = redlock.key(name);
        common::settles(name, vec![None, None, None], || common::kinds(&nodes, &key)).await;
    }
}

#[tokio::test]
async fn overlapping_sets_in_opposite_orders_never_deadlock_or_overlap() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let holds = Arc::new(Mutex::new(Vec::new()));
    let sets: [&[&str]; 3] = [&["x", "y"], &["y", "x"], &["y", "z"]];
    let workers = sets.into_iter().enumerate().map(|(worker, set)| {
        let (redlock, holds) = (redlock.clone(), Arc::clone(&holds));
        async move {
            for _ in 0..8 {
                let lock = redlock
                    .lock_all(set)
                    .await
                    .expect("no deadlock, no timeout");
                let from = Instant::now();
                tokio::task::yield_now().await;
                holds.lock().await.push((
                    from,
                    Instant::now(),
                    (worker, lock.resources().to_vec()),
                ));
                lock.release().await.unwrap();
            }
        }
    });
    futures::future::join_all(workers).await;
    let holds = holds.lock().await;
    assert_eq!(holds.len(), 24);
    common::assert_no_conflicting_overlap(&holds, |a, b| a.1.iter().any(|r| b.1.contains(r)));
}

#[tokio::test]
async fn the_token_is_above_every_earlier_token_of_each_resource_and_below_later_ones() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let mut earlier = Vec::new();
    for name in ["left", "right", "right"] {
        let lock = redlock.try_lock(name).await.unwrap();
        earlier.push(lock.fence().await.unwrap());
        lock.release().await.unwrap();
    }
    let both = redlock.try_lock_all(&["left", "right"]).await.unwrap();
    let token = both.fence().await.unwrap();
    assert!(
        earlier.iter().all(|t| *t < token),
        "{token} not above {earlier:?}"
    );
    both.release().await.unwrap();
    for name in ["left", "right"] {
        let later = redlock.try_lock(name).await.unwrap();
        assert!(later.fence().await.unwrap() > token, "{name}");
        later.release().await.unwrap();
    }
}

#[tokio::test]
async fn a_minority_down_is_tolerated_a_majority_down_is_not() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    nodes.kill(0).unwrap();
    nodes.kill(1).unwrap();
    let both = redlock.try_lock_all(&["p", "q"]).await.unwrap();
    both.release().await.unwrap();
    nodes.kill(2).unwrap();
    let err = redlock.try_lock_all(&["p", "q"]).await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    for name in ["p", "q"] {
        let key = redlock.key(name);
        common::settles(name, vec![None, None], || {
            common::kinds(&nodes, &key)[3..].to_vec()
        })
        .await;
    }
    assert!(matches!(
        redlock.try_lock_all::<&str>(&[]).await,
        Err(Error::NoResources)
    ));
}
