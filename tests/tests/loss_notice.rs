//! A holder whose watchdog runs learns at once that its lock was taken
//! away, not at its next extension: a force-release and a move to a
//! ticket's adopter are announced on the lock's lost channel, and the
//! watchdog extends at once; the refusal fires `lost()`. The leases here
//! last 30 s, so the next extension is 20 s away: a loss seen within 5 s
//! was heard. Real nodes.

mod common;

use std::time::Duration;

use common::{cluster, redlock};
use redquorum::LostReason;

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
    assert_eq!(
        lock.lease().extensions(),
        0,
        "lost by a scheduled extension"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_ticket_was_adopted_elsewhere_learns_of_it_at_once() {
    let nodes = cluster(3);
    let (holder, adopter) = (redlock(&nodes, TTL), redlock(&nodes, TTL));
    let mut lock = holder.lock("handed").await.unwrap();
    lock.auto_extend();
    common::subscribed(&nodes, &format!("{}:lost", lock.key())).await;
    let lost = lock.lease().lost();
    let adopted = adopter.adopt(&lock.ticket()).await.unwrap();
    let heard = tokio::time::timeout(HEARD_WITHIN, lost).await;
    assert_eq!(heard, Ok(LostReason::NotHeld));
    adopted.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_release_of_another_lock_leaves_the_holder_alone() {
    let nodes = cluster(3);
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
