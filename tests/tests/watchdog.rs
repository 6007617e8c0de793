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
    assert_eq!(lock.release().await.unwrap(), 5);
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
    assert_eq!(lock.release().await.unwrap(), 3);
    assert!(
        !lease.is_auto_extending(),
        "watchdog task still alive after release"
    );
    assert_eq!(lease.lost().await, LostReason::Released);
    assert!(values(&nodes, &key).iter().all(Option::is_none));
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
    let redlock = redlock(&nodes, Duration::from_millis(500))
        .with_watchdog(&WatchdogOptions {
            max_extensions: Some(2),
            ..Default::default()
        })
        .unwrap();
    let mut lock = redlock.try_lock("capped").await.unwrap();
    lock.auto_extend();
    let reason = tokio::time::timeout(Duration::from_secs(10), lock.lost())
        .await
        .expect("loss signalled");
    assert!(
        matches!(reason, LostReason::Limit { extensions: 2, .. }),
        "{reason:?}"
    );
    assert_eq!(lock.lease().extensions(), 2);
    // The keys are still ours until the TTL: release works.
    assert_eq!(lock.release().await.unwrap(), 3);
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
