//! `Redlock::shutdown`: before a process exits, every lock it holds is
//! released on every node (a dropped lock is only released by a background
//! task, which a returning `main` cuts short), background work stops, and
//! later calls fail. Real nodes.

mod common;

use std::time::Duration;

use common::{cluster, redlock, values};
use redquorum::{Error, LostReason};

#[tokio::test]
async fn shutdown_releases_every_lock_of_every_kind_and_stops_everything() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(60));
    let mut plain = redlock.try_lock("report").await.unwrap();
    plain.auto_extend();
    let read = redlock.try_read_lock("catalog").await.unwrap();
    let held = redlock.reentrant_owner().try_lock("ledger").await.unwrap();
    let leases = [plain.lease(), read.lease(), held.lease()];
    let keys = ["report", "catalog", "ledger"].map(|r| redlock.key(r));
    // Values the program never releases: one leaked, the others just kept.
    std::mem::forget(held);
    redlock.shutdown().await;
    for key in &keys {
        assert_eq!(values(&nodes, key), [None, None, None], "{key} left behind");
    }
    for lease in &leases {
        assert!(!lease.is_valid(), "{} still valid", lease.resource());
        assert_eq!(lease.lost().await, LostReason::Released);
    }
    let watchdog_ended = common::eventually(Duration::from_secs(5), || async {
        !leases[0].is_auto_extending()
    })
    .await;
    assert!(watchdog_ended, "the watchdog outlived the shutdown");
    assert!(matches!(
        redlock.try_lock("report").await,
        Err(Error::Shutdown)
    ));
    assert!(matches!(
        redlock.clone().read_lock("x").await,
        Err(Error::Shutdown)
    ));
    // Dropping the values afterwards is harmless.
    drop((plain, read));
}

/// Without `shutdown`, a lock still held when the runtime goes away (as
/// when `main` returns) stays on the nodes until its TTL: the reason
/// `shutdown` exists, and what it changes.
#[test]
fn a_lock_dropped_with_its_runtime_stays_held_unless_shut_down_first() {
    let nodes = cluster(3);
    let take = |shut_down: bool| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let redlock = redlock(&nodes, Duration::from_secs(60));
            let lock = redlock
                .try_lock(if shut_down { "tidy" } else { "left" })
                .await
                .unwrap();
            let key = lock.key().to_owned();
            if shut_down {
                redlock.shutdown().await;
            }
            key
        })
        // The runtime is dropped here with the lock never released by hand.
    };
    let left = take(false);
    assert!(
        values(&nodes, &left).iter().all(Option::is_some),
        "expected the abandoned lock to stay: {:?}",
        values(&nodes, &left)
    );
    let tidy = take(true);
    assert_eq!(values(&nodes, &tidy), [None, None, None]);
}
