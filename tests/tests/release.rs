//! Releasing, expiry, extension, and owner checks.

mod common;

use std::time::Duration;

use common::{LANDS_WITHIN, assert_held_on, cluster, eventually, pttl, redlock, values};
use redquorum::{Error, Redlock};
use redquorum_harness::{FaultProxy, ProxyMode};

#[tokio::test]
async fn another_owner_cannot_release_or_extend_our_lock() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(30));
    common::warm_up(&redlock).await;
    let mut stale = redlock.try_lock("shared").await.unwrap();
    // On every node first: a straggler's acquire landing after the DELs
    // below would keep its node for the stale owner.
    assert_held_on(&nodes, &stale, 5).await;
    // The stale holder's hold vanishes from the nodes while its own lease
    // still looks valid (a node clock far ahead, say), and a new owner
    // takes the resource: only the nodes' owner checks stand in the way.
    let key = stale.key().to_owned();
    for i in 0..5 {
        nodes.command(i, &["DEL", &key]).unwrap();
    }
    let ours = redlock.try_lock("shared").await.unwrap();
    assert!(stale.is_valid());

    let err = stale.extend().await.unwrap_err();
    assert!(matches!(err, Error::NotHeld { .. }), "{err:?}");
    let err = stale.release().await.unwrap_err();
    assert!(matches!(err, Error::NotHeld { .. }), "{err:?}");

    assert!(
        eventually(LANDS_WITHIN, || async {
            common::held_on(&nodes, ours.key(), &ours.owner().to_string()) == 5
        })
        .await
    );
    assert_held_on(&nodes, &ours, 5).await;
    assert!(ours.release().await.unwrap() >= 3);
}

#[tokio::test]
async fn a_lock_expires_after_its_ttl_and_can_then_be_taken() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_millis(400));
    let first = redlock.try_lock("expiring").await.unwrap();
    let key = first.key().to_owned();
    assert!(first.validity() <= Duration::from_millis(400 - 4 - 2));
    first.forget();
    assert!(matches!(
        redlock.try_lock("expiring").await,
        Err(Error::Contended { .. })
    ));
    for i in 0..5 {
        let left = pttl(&nodes, i, &key);
        assert!(
            (1..=400).contains(&left) || left == -2,
            "node {i} pttl {left}"
        );
    }
    let taken = eventually(Duration::from_secs(3), || async {
        redlock
            .try_lock("expiring")
            .await
            .map(|l| l.forget())
            .is_ok()
    })
    .await;
    assert!(taken, "lock not available after its ttl");
}

#[tokio::test]
async fn extend_renews_the_ttl_on_every_node() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(2));
    let mut lock = redlock.try_lock("long-job").await.unwrap();
    // After 1 s without an extension about 1 s of the 2 s lease is left; an
    // extension brings it back near 2 s. The bounds sit between the two, with
    // room for a loaded machine.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let before = lock.deadline();
    let validity = lock.extend().await.unwrap();
    assert!(lock.deadline() > before, "deadline did not move");
    assert!(
        validity > Duration::from_millis(1_500) && validity <= Duration::from_secs(2),
        "{validity:?}"
    );
    // The extension returns at a quorum: the last nodes' may be on their way.
    let renewed = eventually(LANDS_WITHIN, || async {
        (0..5).all(|i| pttl(&nodes, i, lock.key()) > 1_500)
    })
    .await;
    let left: Vec<i64> = (0..5).map(|i| pttl(&nodes, i, lock.key())).collect();
    assert!(
        renewed,
        "pttl {left:?}: not renewed (or not extended) on every node"
    );
    lock.release().await.unwrap();
}

#[tokio::test]
async fn release_reports_how_many_nodes_released() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let lock = redlock.try_lock("count").await.unwrap();
    assert!(
        eventually(LANDS_WITHIN, || async {
            common::held_on(&nodes, lock.key(), &lock.owner().to_string()) == 5
        })
        .await
    );
    nodes.kill(4).unwrap();
    let key = lock.key().to_owned();
    assert!(lock.release().await.unwrap() >= 3);
    common::settles("records left", vec![None; 4], || {
        values(&nodes, &key)[..4].to_vec()
    })
    .await;
}

#[tokio::test]
async fn dropping_a_lock_releases_it_in_the_background() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(30));
    let lock = redlock.try_lock("dropped").await.unwrap();
    let key = lock.key().to_owned();
    drop(lock);
    assert!(
        eventually(LANDS_WITHIN, || async {
            values(&nodes, &key).iter().all(Option::is_none)
        })
        .await
    );
    redlock
        .try_lock("dropped")
        .await
        .expect("free again")
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn extend_fails_as_unavailable_when_a_majority_is_down() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let mut lock = redlock.try_lock("fragile").await.unwrap();
    let before = lock.deadline();
    for i in 0..3 {
        nodes.kill(i).unwrap();
    }
    let err = lock.extend().await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert_eq!(
        lock.deadline(),
        before,
        "a failed extend must not move the deadline"
    );
    let outcomes = err.outcomes().unwrap();
    assert_eq!(outcomes.failed(), 3, "{outcomes}");
    lock.forget();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_used_on_a_thread_without_a_runtime_neither_panics_nor_leaks() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(30));
    let mut watched = redlock.try_lock("threaded-watch").await.unwrap();
    let dropped = redlock.try_lock("threaded-drop").await.unwrap();
    let key = dropped.key().to_owned();
    // Background work runs on the Redlock's runtime, not the calling thread's (which has none).
    let watched = std::thread::spawn(move || {
        watched.auto_extend();
        drop(dropped);
        watched
    })
    .join()
    .expect("no panic outside a runtime");
    assert!(
        eventually(LANDS_WITHIN, || async {
            values(&nodes, &key).iter().all(Option::is_none)
        })
        .await
    );
    assert!(watched.lease().is_auto_extending());
    watched.release().await.unwrap();
}

/// A release returns once a quorum confirmed it, without waiting for a slow
/// node; what it owes that node is still sent there, in order, even when
/// the `Redlock` is dropped right after: dropping it must not cut the
/// connection under a release that has not gone out yet.
#[tokio::test]
async fn a_release_does_not_wait_for_a_slow_node_and_still_lands_there_after_the_redlock_is_dropped()
 {
    let nodes = cluster(5);
    let proxy = FaultProxy::start(&format!("127.0.0.1:{}", nodes.port(4))).unwrap();
    let mut urls = nodes.urls();
    urls[4] = proxy.url();
    let redlock = Redlock::builder()
        .nodes(urls)
        .ttl(Duration::from_secs(60))
        .node_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    common::warm_up(&redlock).await;
    // Commands reach node 4 at once; its answers take 2 s each way back.
    proxy.set_mode(ProxyMode::SlowReplies(Duration::from_secs(2)));
    let mut lock = redlock.try_lock("slow-node").await.unwrap();
    let (key, owner) = (lock.key().to_owned(), lock.owner().to_string());
    // The acquire and the extend each keep one of node 4's two call slots
    // busy until their answers come back, so the release queues behind them.
    lock.extend().await.unwrap();
    assert!(
        eventually(LANDS_WITHIN, || async {
            common::holds(&nodes, 4, &key, &owner)
        })
        .await,
        "the acquire never reached node 4"
    );
    let released = lock.release().await.unwrap();
    assert!(
        (3..5).contains(&released),
        "a release confirmed by {released} nodes: it waited for the slow one"
    );
    drop(redlock);
    assert!(
        common::holds(&nodes, 4, &key, &owner),
        "the release reached node 4 before its slots freed"
    );
    // Left to the TTL (60 s) unless the release still goes out.
    assert!(
        eventually(Duration::from_secs(20), || async {
            !common::holds(&nodes, 4, &key, &owner)
        })
        .await,
        "the release queued for node 4 was lost when the Redlock was dropped"
    );
}
