//! The watchdog and the lost-lock signal on the other lock kinds (reentrant,
//! read, write), on real nodes: held past their TTL, lost when a majority
//! dies or the keys vanish, and no task left behind after release, drop or forget.

mod common;

use std::time::{Duration, Instant};

use common::{cluster, eventually, held_on, redlock, values};
use redquorum::{Error, LeaseWatch, LostReason};

/// Waits (bounded) until the lease's watchdog task has ended.
async fn watchdog_ends(lease: &LeaseWatch) -> bool {
    eventually(Duration::from_secs(5), || async {
        !lease.is_auto_extending()
    })
    .await
}

#[tokio::test]
async fn reentrant_and_write_locks_held_three_ttls_under_the_watchdog_are_never_lost_nor_taken() {
    let nodes = cluster(5);
    // A third of the TTL (500 ms) is the margin each extension has: generous for a loaded machine.
    let ttl = Duration::from_millis(1500);
    let redlock = redlock(&nodes, ttl);
    let owner = redlock.reentrant_owner();
    let other = redlock.reentrant_owner();
    let mut hold = owner.try_lock("ledger").await.unwrap();
    let mut write = redlock.try_write_lock("catalog").await.unwrap();
    hold.auto_extend();
    write.auto_extend();
    let holder = hold.owner().to_string();
    let writer = write.owner().to_string();
    let (hold_lost, write_lost) = (hold.lost(), write.lost());
    tokio::pin!(hold_lost, write_lost);

    // Contenders keep trying for three TTLs; every attempt must fail.
    let until = Instant::now() + 3 * ttl;
    let mut rounds = 0;
    while Instant::now() < until {
        tokio::select! {
            reason = &mut hold_lost => panic!("reentrant lease lost after {rounds} rounds: {reason}"),
            reason = &mut write_lost => panic!("write lease lost after {rounds} rounds: {reason}"),
            (reentrant, written, read) = async {
                tokio::join!(
                    other.try_lock("ledger"),
                    redlock.try_write_lock("catalog"),
                    redlock.try_read_lock("catalog"),
                )
            } => {
                assert!(matches!(reentrant, Err(Error::Contended { .. })), "another owner re-entered: {reentrant:?}");
                assert!(matches!(written, Err(Error::Contended { .. })), "a second writer got in: {written:?}");
                assert!(matches!(read, Err(Error::Contended { .. })), "a reader got in: {read:?}");
            }
        }
        rounds += 1;
        assert!(
            held_on(&nodes, &redlock.key("ledger"), &holder) >= 3,
            "our hold is on fewer than a quorum: {:?}",
            values(&nodes, &redlock.key("ledger"))
        );
        assert!(
            held_on(&nodes, write.key(), &writer) >= 3,
            "our writer is on fewer than a quorum: {:?}",
            values(&nodes, write.key())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for (kind, lease) in [("reentrant", hold.lease()), ("write", write.lease())] {
        assert!(lease.is_valid(), "{kind}");
        assert!(
            lease.extensions() >= 2,
            "{kind}: {} extensions in three TTLs",
            lease.extensions()
        );
    }
    assert!(hold.release().await.unwrap() >= 3);
    assert!(write.release().await.unwrap() >= 3);
}

#[tokio::test]
async fn killing_a_majority_makes_every_kinds_lease_lost_by_its_deadline() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_millis(800));
    let mut hold = redlock.reentrant_owner().try_lock("a").await.unwrap();
    let mut read = redlock.try_read_lock("b").await.unwrap();
    let mut write = redlock.try_write_lock("c").await.unwrap();
    hold.auto_extend();
    read.auto_extend();
    write.auto_extend();
    assert!(hold.lease().is_auto_extending() && read.lease().is_auto_extending());
    assert!(write.lease().is_auto_extending());
    for node in 0..3 {
        nodes.kill(node).unwrap();
    }
    let lost = async { tokio::join!(hold.lost(), read.lost(), write.lost()) };
    let reasons = tokio::time::timeout(Duration::from_secs(10), lost)
        .await
        .expect("loss signalled");
    assert_eq!(
        reasons,
        (
            LostReason::Expired,
            LostReason::Expired,
            LostReason::Expired
        )
    );
    assert!(!hold.is_valid() && !read.is_valid() && !write.is_valid());
    for lease in [hold.lease(), read.lease(), write.lease()] {
        assert!(
            watchdog_ends(&lease).await,
            "watchdog of {} still alive after the loss",
            lease.resource()
        );
    }
}

#[tokio::test]
async fn deleting_the_keys_makes_the_next_extension_signal_not_held() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(600));
    let mut hold = redlock
        .reentrant_owner()
        .try_lock("stolen-r")
        .await
        .unwrap();
    let mut write = redlock.try_write_lock("stolen-w").await.unwrap();
    hold.auto_extend();
    write.auto_extend();
    for node in 0..3 {
        nodes
            .command(node, &["DEL", hold.key(), write.key()])
            .unwrap();
    }
    let lost = async { tokio::join!(hold.lost(), write.lost()) };
    let reasons = tokio::time::timeout(Duration::from_secs(10), lost)
        .await
        .expect("loss signalled");
    assert_eq!(reasons, (LostReason::NotHeld, LostReason::NotHeld));
    assert!(!hold.is_valid() && !write.is_valid());
    assert!(watchdog_ends(&hold.lease()).await);
    assert!(watchdog_ends(&write.lease()).await);
    // A lost lease is not revived by a manual extension either.
    assert!(matches!(hold.extend().await, Err(Error::Lost { .. })));
    assert!(matches!(write.extend().await, Err(Error::Lost { .. })));
}

#[tokio::test]
async fn release_drop_and_forget_stop_the_watchdog() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(600));

    // Release: the task is gone before release returns.
    let owner = redlock.reentrant_owner();
    let mut hold = owner.try_lock("stop-release").await.unwrap();
    hold.auto_extend();
    let lease = hold.lease();
    assert!(lease.is_auto_extending());
    assert!(hold.release().await.unwrap() >= 2);
    assert!(
        !lease.is_auto_extending(),
        "watchdog task still alive after release"
    );
    assert_eq!(lease.lost().await, LostReason::Released);
    let (key, owner) = (redlock.key("stop-release"), lease.owner().to_string());
    common::settles("holds left", 0, || held_on(&nodes, &key, &owner)).await;

    // Drop: the task ends and the writer key is released in the background.
    let mut write = redlock.try_write_lock("stop-drop").await.unwrap();
    write.auto_extend();
    let lease = write.lease();
    assert!(lease.is_auto_extending());
    drop(write);
    assert!(
        watchdog_ends(&lease).await,
        "watchdog task still alive after drop"
    );
    assert_eq!(lease.lost().await, LostReason::Released);
    let key = redlock.key("stop-drop");
    assert!(
        eventually(Duration::from_secs(5), || async {
            values(&nodes, &key).iter().all(Option::is_none)
        })
        .await
    );

    // Forget: the task ends and the lease runs out at its deadline.
    let mut read = redlock.try_read_lock("stop-forget").await.unwrap();
    read.auto_extend();
    let lease = read.lease();
    assert!(lease.is_auto_extending());
    read.forget();
    assert!(
        watchdog_ends(&lease).await,
        "watchdog task still alive after forget"
    );
    assert_eq!(lease.lost().await, LostReason::Expired);
    let extensions = lease.extensions();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(lease.extensions(), extensions);
}
