//! `Redlock::with_lock`: a body run under auto-extension, cancelled on loss.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{cluster, eventually, redlock, values};
use redquorum::{Error, LockOptions, WatchdogOptions};
use tokio::sync::oneshot;

/// Sets its flag when dropped: tells whether the body's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn the_body_runs_under_the_lock_and_its_output_comes_back_then_the_lock_is_released() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(1));
    let key = redlock.key("report");
    let out = redlock
        .with_lock("report", |lease| {
            let nodes = &nodes;
            let key = key.clone();
            async move {
                let owner = lease.owner().to_string();
                assert!(common::held_on(nodes, &key, &owner) >= 3);
                // Outlive the TTL: the watchdog must keep it.
                tokio::time::sleep(Duration::from_millis(2200)).await;
                assert!(lease.is_valid());
                assert!(common::held_on(nodes, &key, &owner) >= 3);
                assert!(lease.is_auto_extending());
                lease
            }
        })
        .await
        .unwrap();
    assert!(out.extensions() >= 1, "{} extensions", out.extensions());
    // with_lock stopped the watchdog before it released and returned.
    assert!(!out.is_auto_extending(), "watchdog task left behind");
    // The release returned at quorum: the last node's may still be landing.
    common::settles("records left", vec![None; 5], || values(&nodes, &key)).await;
}

#[tokio::test]
async fn the_body_error_comes_back_unchanged() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(2));
    let out: Result<(), std::io::Error> = redlock
        .with_lock("fails", |_lease| async {
            Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "bad row 7",
            ))
        })
        .await
        .unwrap();
    let err = out.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert_eq!(err.to_string(), "bad row 7");
    // Released all the same; at quorum, the last node's may still be landing.
    let key = redlock.key("fails");
    common::settles("records left", vec![None; 3], || values(&nodes, &key)).await;
}

#[tokio::test]
async fn killing_three_of_five_nodes_cancels_the_body_and_returns_lost() {
    let nodes = cluster(5);
    let ttl = Duration::from_millis(800);
    let redlock = redlock(&nodes, ttl);
    let dropped = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (started_tx, started_rx) = oneshot::channel();
    let call = {
        let (dropped, finished) = (Arc::clone(&dropped), Arc::clone(&finished));
        let redlock = redlock.clone();
        tokio::spawn(async move {
            redlock
                .with_lock("doomed", |_lease| async move {
                    let _flag = DropFlag(dropped);
                    let _ = started_tx.send(());
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    finished.store(true, Ordering::SeqCst);
                })
                .await
        })
    };
    started_rx.await.expect("body started");
    let killed_at = Instant::now();
    for node in 0..3 {
        nodes.kill(node).unwrap();
    }
    let result = tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("with_lock returned")
        .unwrap();
    let took = killed_at.elapsed();
    assert!(matches!(result, Err(Error::Lost { .. })), "{result:?}");
    assert!(dropped.load(Ordering::SeqCst), "body future not dropped");
    assert!(!finished.load(Ordering::SeqCst));
    // "Within about one TTL": generous, as the machine is loaded; the body would run 60 s.
    assert!(took < ttl * 10, "loss noticed after {took:?}");
}

#[tokio::test]
async fn a_lock_not_taken_is_a_lock_error_and_the_body_never_runs() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let held = redlock.try_lock("busy").await.unwrap();
    let impatient = redlock
        .with_options(&LockOptions {
            ttl: Duration::from_secs(5),
            wait: Duration::from_millis(200),
            ..Default::default()
        })
        .unwrap();
    let ran = AtomicBool::new(false);
    let result = impatient
        .with_lock("busy", |_lease| async { ran.store(true, Ordering::SeqCst) })
        .await;
    assert!(
        matches!(result, Err(Error::WaitTimeout { .. })),
        "{result:?}"
    );
    assert!(!ran.load(Ordering::SeqCst));
    held.release().await.unwrap();
}

#[tokio::test]
async fn reaching_the_extension_limit_returns_its_own_error() {
    let nodes = cluster(3);
    // A lease long enough that the one extension lands in time on two busy
    // cores (with 500 ms it came too late there, and the lease was Lost).
    let redlock = redlock(&nodes, Duration::from_secs(3))
        .with_watchdog(&WatchdogOptions {
            max_extensions: Some(1),
            ..Default::default()
        })
        .unwrap();
    let key = redlock.key("capped-body");
    let result = redlock
        .with_lock("capped-body", |_lease| {
            tokio::time::sleep(Duration::from_secs(60))
        })
        .await;
    assert!(
        matches!(result, Err(Error::ExtensionLimit { extensions: 1, .. })),
        "{result:?}"
    );
    assert!(
        eventually(Duration::from_secs(5), || async {
            values(&nodes, &key).iter().all(Option::is_none)
        })
        .await
    );
}
