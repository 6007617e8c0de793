//! The library's own keys (fence counters, anything per resource) live in a
//! layout no resource name can reach: adversarial names never collide with
//! another resource's keys. Real nodes.

mod common;

use std::time::Duration;

use common::{cluster, redlock};

/// Names a user may pass that look like the library's own keys, or carry
/// characters a naive layout would mix up.
fn adversarial_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "orders",
        "orders:fence",
        "orders:readers",
        "orders:writer",
        "orders:intent",
        "x:fence",
        "{orders}",
        "{orders}:fence",
        "orders}",
        "a{b}c",
        "}",
        "{",
        "%7D",
        "line\nbreak",
        "tab\tand\0nul",
        "ünïcødé",
        "lock:orders",
        "redquorum:released:lock:orders",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    names.push("m".repeat(1 << 20)); // a 1 MiB name
    names
}

/// All the names are held at once by one owner each: none blocks another,
/// each gets a fencing token, and each releases on every node.
#[tokio::test]
async fn adversarial_resource_names_never_collide() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(30));
    let names = adversarial_names();
    let mut held = Vec::new();
    for name in &names {
        let lock = redlock
            .try_lock(name)
            .await
            .unwrap_or_else(|e| panic!("{:?} refused: {e}", &name[..name.len().min(40)]));
        lock.fence().await.expect("a fencing token");
        held.push(lock);
    }
    // Every key of every name is distinct.
    let mut keys: Vec<String> = names.iter().map(|n| redlock.key(n)).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), names.len());
    // Released on a quorum at least (an acquire still queued for a slow
    // node when the quorum was won is dropped unsent).
    for lock in held {
        assert!(lock.release().await.unwrap() >= 2);
    }
}

/// After anyone locks `orders`, `orders:fence` is a resource like any other.
#[tokio::test]
async fn locking_a_name_never_makes_another_name_contended() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(30));
    redlock
        .try_lock("orders")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let fence_named = redlock.try_lock("orders:fence").await;
    assert!(fence_named.is_ok(), "{fence_named:?}");
    // And a holder of `x:fence` does not break fencing of `x`.
    let _x_fence = redlock.try_lock("x:fence").await.unwrap();
    let x = redlock.try_lock("x").await.unwrap();
    let fence = x.fence().await;
    assert!(fence.is_ok(), "{fence:?}");
}
