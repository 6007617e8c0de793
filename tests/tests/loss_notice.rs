//! A holder whose watchdog runs learns at once that its lock was taken
//! away, not at its next extension: a force-release and a move to a
//! ticket's adopter are announced on the lock's lost channel, and the
//! watchdog extends at once (at each node's announcement: one heard before
//! the other nodes were reached may still be extended there); the refusal
//! fires `lost()`. The leases here
//! last 30 s, so the next extension is 20 s away: a loss seen within 5 s
//! was heard. Real nodes.

mod common;

use std::time::Duration;

use common::{cluster, redlock};
use redquorum::LostReason;
use redquorum_harness::{FaultProxy, ProxyMode};

/// Longer than the test: only an announcement makes the holder learn early.
const TTL: Duration = Duration::from_secs(30);
/// Far below the 20 s until the watchdog's own next extension.
const HEARD_WITHIN: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_released_holder_learns_of_it_at_once() {
    let nodes = cluster(3);
    let (holder, operator) = (redlock(&nodes, TTL), redlock(&nodes, TTL));
    let mut lock = holder.lock("ledger").await.unwrap();
    lock.auto_extend();
    common::subscribed(&nodes, &format!("{}:lost", lock.key())).await;
    let lost = lock.lease().lost();
    operator.force_release("ledger").await.unwrap();
    let heard = tokio::time::timeout(HEARD_WITHIN, lost).await;
    assert_eq!(heard, Ok(LostReason::NotHeld));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_ticket_was_adopted_elsewhere_learns_of_it_at_once() {
    let nodes = cluster(3);
    let (holder, adopter) = (redlock(&nodes, TTL), redlock(&nodes, TTL));
    let mut lock = holder.lock("handed").await.unwrap();
    // Everywhere before it moves: a late acquire would keep its node.
    common::assert_held_on(&nodes, &lock, 3).await;
    lock.auto_extend();
    common::subscribed(&nodes, &format!("{}:lost", lock.key())).await;
    let lost = lock.lease().lost();
    let adopted = adopter.adopt(&lock.ticket()).await.unwrap();
    let heard = tokio::time::timeout(HEARD_WITHIN, lost).await;
    assert_eq!(heard, Ok(LostReason::NotHeld));
    adopted.release().await.unwrap();
}

/// One node: no announcement can come from a node the force-release has
/// reached while another still has the hold (an extension heard early may
/// then succeed), so any extension here was made for the other lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_release_of_another_lock_leaves_the_holder_alone() {
    let nodes = cluster(1);
    let (holder, operator) = (redlock(&nodes, TTL), redlock(&nodes, TTL));
    let mut lock = holder.lock("mine").await.unwrap();
    lock.auto_extend();
    common::subscribed(&nodes, &format!("{}:lost", lock.key())).await;
    let _other = holder.lock("theirs").await.unwrap();
    operator.force_release("theirs").await.unwrap();
    // Its own lock's announcement, sent after the other one on the same
    // connections, is the marker: once it is heard, the other was too.
    operator.force_release("mine").await.unwrap();
    let heard = tokio::time::timeout(HEARD_WITHIN, lock.lease().lost()).await;
    assert_eq!(heard, Ok(LostReason::NotHeld));
    assert_eq!(
        lock.lease().extensions(),
        0,
        "extended for another lock's loss"
    );
}

/// The move reaches node 0 first (the adopter's calls to nodes 1 and 2 are
/// held back): the holder hears node 0's announcement and extends, which
/// succeeds on nodes 1 and 2. When the held-back moves land there, their
/// announcements carry the same tag (the old owner): each must still wake
/// the watchdog, whose next extension then finds the lock gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_nodes_announcement_of_a_move_is_heard() {
    let nodes = cluster(3);
    let proxies: Vec<FaultProxy> = (1..3)
        .map(|i| FaultProxy::start(&format!("127.0.0.1:{}", nodes.port(i))).unwrap())
        .collect();
    let mut urls = nodes.urls();
    for (url, proxy) in urls[1..].iter_mut().zip(&proxies) {
        *url = proxy.url();
    }
    let adopter = redquorum::Redlock::builder()
        .nodes(urls)
        .ttl(TTL)
        .node_timeout(Duration::from_millis(250))
        .build()
        .unwrap();
    common::warm_up(&adopter).await;
    let holder = redlock(&nodes, TTL);
    let mut lock = holder.lock("moved-late").await.unwrap();
    common::assert_held_on(&nodes, &lock, 3).await;
    lock.auto_extend();
    // Node 0's announcement must reach it: subscribed on every node.
    let line = format!("{}:lost", lock.key());
    let everywhere = common::eventually(common::LANDS_WITHIN, || async {
        (0..3).all(|i| common::subscribers(&nodes, i, &line) >= 1)
    })
    .await;
    assert!(everywhere, "the watchdog did not subscribe on every node");
    proxies.iter().for_each(|p| p.set_mode(ProxyMode::Stall));
    let adopting = tokio::spawn({
        let ticket = lock.ticket();
        async move { adopter.adopt(&ticket).await.map(drop) }
    });
    let extended =
        common::eventually(HEARD_WITHIN, || async { lock.lease().extensions() >= 1 }).await;
    assert!(extended, "node 0's announcement was not heard");
    assert!(lock.is_valid(), "lost on node 0's announcement alone");
    let lost = lock.lease().lost();
    proxies.iter().for_each(|p| p.set_mode(ProxyMode::Pass));
    let heard = tokio::time::timeout(HEARD_WITHIN, lost).await;
    assert_eq!(heard, Ok(LostReason::NotHeld));
    let _ = adopting.await;
}

/// A majority restarted empty (no persistence) announces nothing, but the
/// holder's subscriber connections to those nodes break and come back: the
/// reconnection wakes the watchdog, whose extension finds the hold gone on
/// a majority.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_learns_at_once_that_a_majority_restarted_empty() {
    let nodes = cluster(3);
    let holder = redlock(&nodes, TTL);
    let mut lock = holder.lock("forgotten").await.unwrap();
    common::assert_held_on(&nodes, &lock, 3).await;
    lock.auto_extend();
    common::subscribed(&nodes, &format!("{}:lost", lock.key())).await;
    let lost = lock.lease().lost();
    for node in 1..3 {
        nodes.restart(node).unwrap();
    }
    let heard = tokio::time::timeout(HEARD_WITHIN, lost).await;
    assert_eq!(heard, Ok(LostReason::NotHeld));
}
