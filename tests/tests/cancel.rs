//! Cancel safety: a dropped `lock()` future leaves no key behind.

mod common;

use std::time::Duration;

use common::{cluster, eventually, values};
use redquorum::Redlock;

#[tokio::test]
async fn a_lock_future_dropped_mid_attempt_leaves_no_key_of_ours() {
    let nodes = cluster(5);
    // A long node timeout keeps the attempt in flight while three nodes are paused.
    let redlock = Redlock::builder()
        .nodes(nodes.urls())
        .ttl(Duration::from_secs(30))
        .node_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let key = redlock.key("cancelled");
    common::warm_up(&redlock).await;
    for i in 0..3 {
        nodes.pause(i).unwrap();
    }
    let attempt = tokio::time::timeout(Duration::from_millis(300), redlock.lock("cancelled")).await;
    assert!(
        attempt.is_err(),
        "the attempt should still be in flight when dropped"
    );
    // The two live nodes got our key before the drop ...
    assert_eq!(
        values(&nodes, &key)[3..]
            .iter()
            .filter(|v| v.is_some())
            .count(),
        2
    );
    for i in 0..3 {
        nodes.resume(i).unwrap();
    }
    // ... and the guard's unwind removes it everywhere, after the late acquires.
    let clean = eventually(Duration::from_secs(5), || async {
        values(&nodes, &key).iter().all(Option::is_none)
    })
    .await;
    assert!(clean, "leaked keys: {:?}", values(&nodes, &key));
}
