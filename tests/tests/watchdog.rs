//! The lease watchdog and the lost-lock signal, on real nodes.

mod common;

use std::time::{Duration, Instant};

use common::{cluster, eventually, held_on, redlock, values};
use redquorum::{Error, LockOptions, LostReason, WatchdogOptions};

#[tokio::test]
async fn a_lock_held_three_ttls_under_the_watchdog_is_never_lost_nor_taken() {
    let nodes = cluster(5);
    // A third of the TTL (500 ms) is the margin each extension has: generous for a loaded machine.
    let ttl = Duration::from_millis(1500);
    let redlock = redlock(&nodes, ttl);
    let mut lock = redlock.try_lock("long-job").await.unwrap();
    lock.auto_extend();
    let owner = lock.owner().to_string();
    let lost = lock.lost();
    tokio::pin!(lost);

    // A contender keeps trying for three TTLs; every attempt must fail.
    let until = Instant::now() + 3 * ttl;
    let mut attempts = 0;
    while Instant::now() < until {
        tokio::select! {
            reason = &mut lost => panic!("lease lost after {attempts} contender attempts: {reason}"),
            attempt = redlock.try_lock("long-job") => {
                assert!(
                    matches!(attempt, Err(Error::Contended { .. })),
                    "another owner got the lock: {attempt:?}"
                );
            }
        }
        attempts += 1;
        assert!(
            held_on(&nodes, lock.key(), &owner) >= 3,
            "our key is on fewer than a quorum: {:?}",
            values(&nodes, lock.key())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(lock.is_valid());
    assert!(
        lock.lease().extensions() >= 2,
        "{} extensions in three TTLs",
        lock.lease().extensions()
    );
    assert!(lock.release().await.unwrap() >= 3);
}

#[tokio::test]
async fn release_stops_the_watchdog_before_it_returns() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(600));
    let mut lock = redlock.try_lock("stop-on-release").await.unwrap();
    lock.auto_extend();
    let lease = lock.lease();
    assert!(lease.is_auto_extending());
    let key = lock.key().to_owned();
    assert!(lock.release().await.unwrap() >= 2);
    assert!(
        !lease.is_auto_extending(),
        "watchdog task still alive after release"
    );
    assert_eq!(lease.lost().await, LostReason::Released);
    common::settles("records left", vec![None; 3], || values(&nodes, &key)).await;
}

#[tokio::test]
async fn dropping_the_lock_stops_the_watchdog_and_releases() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(600));
    let mut lock = redlock.try_lock("stop-on-drop").await.unwrap();
    lock.auto_extend();
    let lease = lock.lease();
    let key = lock.key().to_owned();
    drop(lock);
    assert!(
        eventually(Duration::from_secs(5), || async {
            !lease.is_auto_extending()
        })
        .await,
        "watchdog task still alive after drop"
    );
    assert!(
        eventually(Duration::from_secs(5), || async {
            values(&nodes, &key).iter().all(Option::is_none)
        })
        .await
    );
}

#[tokio::test]
async fn forgetting_the_lock_stops_the_watchdog_and_lets_the_lease_run_out() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(600));
    let mut lock = redlock.try_lock("stop-on-forget").await.unwrap();
    lock.auto_extend();
    let lease = lock.lease();
    lock.forget();
    assert!(
        eventually(Duration::from_secs(5), || async {
            !lease.is_auto_extending()
        })
        .await,
        "watchdog task still alive after forget"
    );
    // No more extensions: the lease ends at its deadline.
    assert_eq!(lease.lost().await, LostReason::Expired);
    let extensions = lease.extensions();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(lease.extensions(), extensions);
}

#[tokio::test]
async fn deleting_our_keys_makes_the_next_extension_signal_not_held() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_millis(600));
    let mut lock = redlock.try_lock("stolen").await.unwrap();
    lock.auto_extend();
    let lease = lock.lease();
    for node in 0..5 {
        nodes.command(node, &["DEL", lock.key()]).unwrap();
    }
    let reason = tokio::time::timeout(Duration::from_secs(10), lock.lost())
        .await
        .expect("loss signalled");
    assert_eq!(reason, LostReason::NotHeld);
    assert!(!lease.is_valid());
    assert!(
        !lock.is_valid(),
        "a lock declared lost still claims validity"
    );
    assert!(
        eventually(Duration::from_secs(5), || async {
            !lease.is_auto_extending()
        })
        .await,
        "watchdog task still alive after the loss"
    );
    assert!(matches!(lock.extend().await, Err(Error::Lost { .. })));
}

#[tokio::test]
async fn killing_a_majority_makes_the_lease_lost_by_its_deadline() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_millis(800));
    let mut lock = redlock.try_lock("majority-down").await.unwrap();
    lock.auto_extend();
    for node in 0..3 {
        nodes.kill(node).unwrap();
    }
    let reason = tokio::time::timeout(Duration::from_secs(10), lock.lost())
        .await
        .expect("loss signalled");
    assert_eq!(reason, LostReason::Expired);
    assert!(!lock.is_valid());
}

#[tokio::test]
async fn the_extension_limit_is_signalled_as_its_own_reason() {
    let nodes = cluster(3);
    // A lease long enough that both extensions land in time on two busy
    // cores (with 500 ms one came too late there, and the lease Expired).
    let redlock = redlock(&nodes, Duration::from_secs(3))
        .with_watchdog(&WatchdogOptions {
            max_extensions: Some(2),
            ..Default::default()
        })
        .unwrap();
    let mut lock = redlock.try_lock("capped").await.unwrap();
    lock.auto_extend();
    let reason = tokio::time::timeout(Duration::from_secs(30), lock.lost())
        .await
        .expect("loss signalled");
    assert!(
        matches!(reason, LostReason::Limit { extensions: 2, .. }),
        "{reason:?}"
    );
    assert_eq!(lock.lease().extensions(), 2);
    // The keys are still ours until the TTL: release works.
    assert!(lock.release().await.unwrap() >= 2);
}

#[tokio::test]
async fn an_extend_before_not_below_the_ttl_is_refused() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(1));
    let err = redlock
        .with_watchdog(&WatchdogOptions {
            extend_before: Some(Duration::from_secs(1)),
            ..Default::default()
        })
        .unwrap_err();
    assert!(
        matches!(err, redquorum::BuildError::ExtendBeforeOutOfRange { .. }),
        "{err:?}"
    );
    // A TTL shortened later must still leave room to extend.
    let early = redlock
        .with_watchdog(&WatchdogOptions {
            extend_before: Some(Duration::from_millis(500)),
            ..Default::default()
        })
        .unwrap();
    let err = early
        .with_options(&LockOptions {
            ttl: Duration::from_millis(400),
            ..Default::default()
        })
        .unwrap_err();
    assert!(
        matches!(err, redquorum::BuildError::ExtendBeforeOutOfRange { .. }),
        "{err:?}"
    );
}

/// A holder whose extensions cannot reach the nodes is told it is at risk a
/// stop margin before its deadline, while there is still time to stop; only
/// then does the lease run out.
#[tokio::test]
async fn a_holder_cut_off_from_every_node_is_at_risk_before_its_lease_ends() {
    let nodes = cluster(3);
    let ttl = Duration::from_millis(1500);
    let redlock = redlock(&nodes, ttl);
    let mut lock = redlock.try_lock("cut-off").await.unwrap();
    lock.auto_extend();
    let lease = lock.lease();
    let margin = lease.stop_margin();
    // Default: half of extend_before (ttl / 3).
    assert_eq!(margin, ttl / 6);
    for i in 0..nodes.len() {
        nodes.pause(i).unwrap();
    }
    let risk = lease.at_risk().await;
    let seen_at = Instant::now();
    let deadline = lease.deadline();
    for i in 0..nodes.len() {
        nodes.resume(i).unwrap();
    }
    let redquorum::AtRisk::Expiring { left } = risk else {
        panic!("expected expiring, got {risk:?}")
    };
    assert!(
        left <= margin && !left.is_zero(),
        "left {left:?}, margin {margin:?}"
    );
    assert!(seen_at < deadline, "at risk only after the deadline");
    assert_eq!(
        lease.extensions(),
        0,
        "an extension succeeded while cut off"
    );
    drop(lock);
}

#[tokio::test]
async fn a_healthy_watchdog_never_puts_the_lease_at_risk() {
    let nodes = cluster(3);
    let ttl = Duration::from_millis(900);
    let redlock = redlock(&nodes, ttl);
    let mut lock = redlock.try_lock("healthy").await.unwrap();
    lock.auto_extend();
    let lease = lock.lease();
    let watched = tokio::time::timeout(3 * ttl, lease.at_risk()).await;
    assert!(
        watched.is_err(),
        "at risk while the nodes were healthy: {watched:?}"
    );
    assert!(lease.extensions() >= 2, "{} extensions", lease.extensions());
    lock.release().await.unwrap();
}

#[tokio::test]
async fn a_stop_margin_not_below_extend_before_is_refused() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(3));
    let err = redlock
        .with_watchdog(&WatchdogOptions {
            extend_before: Some(Duration::from_secs(1)),
            stop_margin: Some(Duration::from_secs(1)),
            ..Default::default()
        })
        .unwrap_err();
    assert!(
        matches!(err, redquorum::BuildError::StopMarginOutOfRange { .. }),
        "{err:?}"
    );
}

/// Loss is final: once `lost()` has resolved, `extend` fails and the lease
/// stays invalid, even while our keys still live on the nodes (a drift
/// allowance this large keeps them there well past the local deadline).
#[tokio::test]
async fn extend_after_the_lease_was_lost_fails_and_does_not_revive_it() {
    let nodes = cluster(3);
    let redlock = redquorum::Redlock::builder()
        .nodes(nodes.urls())
        .ttl(Duration::from_millis(800))
        .drift_factor(0.4)
        .node_timeout(Duration::from_millis(250))
        .build()
        .unwrap();
    let mut lock = redlock.try_lock("final").await.unwrap();
    assert_eq!(lock.lost().await, LostReason::Expired);
    assert!(
        common::held_on(&nodes, lock.key(), &lock.owner().to_string()) >= 2
            || redquorum_keys_present(&nodes, lock.key())
    );
    let extended = lock.extend().await;
    assert!(matches!(extended, Err(Error::Lost { .. })), "{extended:?}");
    assert!(!lock.is_valid());
}

/// Whether the lock key still exists on a majority (whatever its layout).
fn redquorum_keys_present(nodes: &redquorum_harness::Cluster, key: &str) -> bool {
    (0..nodes.len())
        .filter(|&i| {
            nodes
                .command(i, &["EXISTS", key])
                .ok()
                .and_then(|r| r.as_int())
                == Some(1)
        })
        .count()
        >= 2
}
