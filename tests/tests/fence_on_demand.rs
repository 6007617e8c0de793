//! Tokens on demand, on real nodes: a handle's acquires propose nothing
//! until one of its locks asks for a token (or with `eager_fence`); a
//! `fence()` whose acquire proposed none proposes on the nodes that granted
//! and still hold, then writes back; a node whose hold came from an acquire
//! that landed after the grant is not counted (docs/fencing.md, "The
//! protocol").

mod common;

use std::time::Duration;

use common::{LANDS_WITHIN, cluster, eventually, redlock, strings};
use redquorum::{Error, Ineligible, LockOptions, NodeOutcome, Redlock};
use redquorum_harness::Cluster;

/// Script calls of the lock script on each node of `nodes`.
fn scripts(nodes: &Cluster) -> Vec<u64> {
    (0..nodes.len())
        .map(|i| common::calls(nodes, i, "evalsha"))
        .collect()
}

/// Waits until every node ran `expected` more script calls than `before`
/// (the last node's may land just after the quorum confirmed, or not at
/// all: a round ends at a quorum, and a call still queued behind the
/// previous round on a slow node's connection is then dropped); asserts
/// that none ran more and that a quorum ran that many.
async fn ran(nodes: &Cluster, before: &[u64], expected: u64, what: &str) {
    let more = || -> Vec<u64> {
        scripts(nodes)
            .iter()
            .zip(before)
            .map(|(now, was)| now - was)
            .collect()
    };
    eventually(LANDS_WITHIN, || async {
        more().iter().all(|&n| n == expected)
    })
    .await;
    let per_node = more();
    assert!(
        per_node.iter().all(|&n| n <= expected),
        "{what}: {per_node:?}"
    );
    let every_round = per_node.iter().filter(|&&n| n == expected).count();
    assert!(
        every_round >= 2,
        "{what}: a quorum ran every round: {per_node:?}"
    );
}

/// Takes a lock and its token: the acquire must have run `acquire` script
/// calls on each node (0: a native SET, proposing nothing), and `fence()`
/// `fence` more.
async fn calls_per_node_for_a_token(
    nodes: &Cluster,
    redlock: &Redlock,
    (acquire, fence): (u64, u64),
) {
    common::warm_up(redlock).await;
    let before = scripts(nodes);
    let lock = redlock.try_lock("one-token").await.unwrap();
    ran(nodes, &before, acquire, "the acquire").await;
    let before = scripts(nodes);
    let token = lock.fence().await.unwrap().get();
    ran(nodes, &before, fence, "fence()").await;
    // The write-back stored the token on the nodes it reached.
    let stored = strings(nodes, &redlock.fence_key("one-token"));
    let at_token = stored
        .iter()
        .flatten()
        .filter(|v| v.parse::<u64>().unwrap() >= token);
    assert!(at_token.count() >= 2, "{stored:?} vs {token}");
    lock.release().await.expect("release");
}

#[tokio::test]
async fn a_handle_pays_a_proposal_round_for_its_first_token_only() {
    let nodes = cluster(3);
    let on_demand = redlock(&nodes, Duration::from_secs(30));
    // The acquire (a native SET), then propose and write back.
    calls_per_node_for_a_token(&nodes, &on_demand, (0, 2)).await;
    // The handle's locks ask for tokens: its acquires propose now (in the
    // script), and a token costs the write-back only. Its clones share that.
    calls_per_node_for_a_token(&nodes, &on_demand, (1, 1)).await;
    calls_per_node_for_a_token(&nodes, &on_demand.clone(), (1, 1)).await;
}

#[tokio::test]
async fn eager_fence_proposes_from_the_first_acquire() {
    let nodes = cluster(3);
    let eager = redlock(&nodes, Duration::from_secs(30))
        .with_options(&LockOptions {
            ttl: Duration::from_secs(30),
            eager_fence: true,
            ..Default::default()
        })
        .unwrap();
    // Acquire with its proposal (the script), write back.
    calls_per_node_for_a_token(&nodes, &eager, (1, 1)).await;
}

#[tokio::test]
async fn a_node_whose_hold_came_after_the_grant_is_not_counted_for_the_token() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    common::wait_connected(&redlock, &nodes).await;
    // Node 2 is stopped: the locks are granted by nodes 0 and 1 alone.
    nodes.pause(2).unwrap();
    let kept = redlock.try_lock("kept").await.unwrap();
    let lost = redlock.try_lock("lost").await.unwrap();
    nodes.resume(2).unwrap();
    common::wait_connected(&redlock, &nodes).await;
    // Node 2's votes count again (probed, not refused or down), so only the
    // rule under test can refuse its answers below.
    let counted = eventually(Duration::from_secs(5), || async {
        let health = redlock.health().await;
        health
            .iter()
            .all(|(_, h)| h.refusal().is_none() && h.down().is_none())
    })
    .await;
    assert!(counted, "{:?}", redlock.health().await);
    // Node 2 holds both now, as the acquires it received late would leave
    // it: set here in case they were dropped with the connection.
    for lock in [&kept, &lost] {
        let (key, owner) = (lock.key(), lock.owner().to_string());
        nodes
            .command(2, &["SET", key, &owner, "PX", "10000"])
            .unwrap();
        assert!(common::holds(&nodes, 2, key, &owner));
    }
    // "lost" lost its hold on node 0: nodes 1 and 2 still hold it, but only
    // node 1 granted it, and one granting node is no quorum.
    nodes.command(0, &["DEL", lost.key()]).unwrap();
    match lost.fence().await {
        Err(Error::FenceUnavailable { outcomes, .. }) => {
            let node_2 = outcomes.iter().nth(2).map(|(_, outcome)| outcome);
            assert!(
                matches!(node_2, Some(NodeOutcome::Refused(Ineligible::NotAGranter))),
                "{outcomes:?}"
            );
            assert_eq!(outcomes.acquired(), 1, "{outcomes:?}");
        }
        other => panic!("a token counted a node that did not grant: {other:?}"),
    }
    // "kept" still holds on both nodes that granted it: its token is issued.
    let token = kept.fence().await.expect("nodes 0 and 1 granted and hold");
    assert!(token.get() > 0);
    kept.release().await.unwrap();
    let _ = lost.release().await;
}
