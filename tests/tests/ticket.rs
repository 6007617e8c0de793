//! Lease tickets on real nodes: a lock handed to another client (as to
//! another process: a `Redlock` of its own) with its fencing token, the old
//! holder losing it; two adopters of one ticket, one winner; a ticket of a
//! killed holder, of an expired hold, a forged one; adoption with a node
//! down and with a majority down; two adopters that split the nodes.

mod common;

use std::time::Duration;

use common::{cluster, eventually, held_on, redlock};
use redquorum::{Error, LostReason, Ticket};

/// Whether any node (of those running) has a key at `key`.
fn on_any_node(nodes: &redquorum_harness::Cluster, key: &str) -> bool {
    (0..nodes.len()).any(|i| {
        let exists = nodes.command(i, &["EXISTS", key]).ok();
        exists.and_then(|reply| reply.as_int()) == Some(1)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_handed_to_another_client_keeps_its_fence_and_its_old_holder_loses_it() {
    let nodes = cluster(3);
    let (holder, adopter) = (
        redlock(&nodes, Duration::from_secs(2)),
        redlock(&nodes, Duration::from_secs(2)),
    );
    common::warm_up(&adopter).await;
    let mut lock = holder.lock("deploy").await.unwrap();
    // Everywhere before it moves: a late acquire would keep its node.
    common::assert_held_on(&nodes, &lock, 3).await;
    lock.auto_extend();
    let token = lock.fence().await.unwrap();
    let old = lock.owner().to_string();
    // Through its string form, as between two steps of a pipeline.
    let ticket: Ticket = lock.ticket().to_string().parse().unwrap();
    assert_eq!(ticket.fence(), Some(token));

    let adopted = adopter.adopt(&ticket).await.expect("adopted");
    assert_eq!(
        adopted.fence().await.unwrap(),
        token,
        "the fence carried over"
    );
    assert_ne!(adopted.owner(), lock.owner());
    let (new, key) = (adopted.owner().to_string(), adopted.key().to_owned());
    let moved = eventually(common::LANDS_WITHIN, || async {
        held_on(&nodes, adopted.key(), &new) == 3 && held_on(&nodes, lock.key(), &old) == 0
    })
    .await;
    assert!(moved, "not moved on every node");

    // The old holder's watchdog finds the lock gone at its next extension.
    let lost = tokio::time::timeout(Duration::from_secs(3), lock.lease().lost()).await;
    assert_eq!(lost, Ok(LostReason::NotHeld));
    let err = lock.release().await.unwrap_err();
    assert!(
        matches!(err, Error::NotHeld { .. } | Error::Lost { .. }),
        "{err}"
    );
    assert_eq!(
        held_on(&nodes, adopted.key(), &new),
        3,
        "the old release took it"
    );
    // The adopter's lease is its own: renewed and released by it.
    let mut adopted = adopted;
    adopted.extend().await.expect("the adopter extends");
    assert!(adopted.release().await.unwrap() >= 2);
    let gone = eventually(common::LANDS_WITHIN, || async {
        !on_any_node(&nodes, &key)
    })
    .await;
    assert!(gone, "the adopter's release left a key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_handle_learns_at_once_that_its_lock_moved() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(30));
    let lock = redlock.lock("in-process").await.unwrap();
    let adopted = redlock.adopt(&lock.ticket()).await.unwrap();
    // No extension needed: the adopter is this handle.
    let lost = tokio::time::timeout(Duration::from_millis(100), lock.lease().lost()).await;
    assert_eq!(lost, Ok(LostReason::Moved));
    assert!(!lock.is_valid());
    // The move returned at a quorum: every node has it first.
    let owner = adopted.owner().to_string();
    let everywhere = eventually(common::LANDS_WITHIN, || async {
        held_on(&nodes, adopted.key(), &owner) == 3
    })
    .await;
    assert!(everywhere, "the move did not land on every node");
    // Its release (as on drop) is owner-checked: the adopter keeps it. A
    // release that removes nothing waits for every node's answer.
    let err = lock.release().await.unwrap_err();
    assert!(
        matches!(err, Error::NotHeld { .. } | Error::Lost { .. }),
        "{err}"
    );
    assert_eq!(
        held_on(&nodes, adopted.key(), &owner),
        3,
        "the old handle's release removed the adopted lock"
    );
    adopted.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_adopters_of_one_ticket_exactly_one_wins() {
    let nodes = cluster(5);
    let holder = redlock(&nodes, Duration::from_secs(30));
    let (a, b) = (
        redlock(&nodes, Duration::from_secs(30)),
        redlock(&nodes, Duration::from_secs(30)),
    );
    for adopter in [&holder, &a, &b] {
        common::warm_up(adopter).await;
    }
    for round in 0..20 {
        let lock = holder.lock(&format!("race-{round}")).await.unwrap();
        // On every node first: moves racing a late acquire could split.
        common::assert_held_on(&nodes, &lock, 5).await;
        let ticket = lock.into_ticket();
        let (first, second) = tokio::join!(a.adopt(&ticket), b.adopt(&ticket));
        let won: Vec<_> = [first, second].into_iter().filter_map(Result::ok).collect();
        assert_eq!(won.len(), 1, "round {round}");
        let owner = won[0].owner().to_string();
        assert!(held_on(&nodes, won[0].key(), &owner) >= 3, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holders_ticket_is_adopted_within_its_ttl() {
    let nodes = cluster(3);
    let adopter = redlock(&nodes, Duration::from_secs(5));
    let ticket = {
        // A holder that hands its ticket on and is gone, unreleased (its
        // Redlock dropped with its connections: as a killed process).
        let holder = redlock(&nodes, Duration::from_secs(5));
        holder.lock("handed-on").await.unwrap().into_ticket()
    };
    let mut adopted = adopter.adopt(&ticket).await.expect("adopted");
    adopted.auto_extend();
    // Kept past the old lease by the adopter's watchdog.
    tokio::time::sleep_until((std::time::Instant::now() + Duration::from_secs(6)).into()).await;
    assert!(adopted.is_valid());
    let taken = redlock(&nodes, Duration::from_secs(5))
        .try_lock("handed-on")
        .await;
    assert!(matches!(taken, Err(Error::Contended { .. })), "{taken:?}");
    adopted.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_or_forged_ticket_is_not_held_and_changes_nothing() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(600));
    let lock = redlock.lock("short").await.unwrap();
    let key = lock.key().to_owned();
    let expired = lock.into_ticket();
    let gone = eventually(Duration::from_secs(5), || async {
        !on_any_node(&nodes, &key)
    })
    .await;
    assert!(gone, "the hold never expired");
    let err = redlock.adopt(&expired).await.unwrap_err();
    assert!(matches!(err, Error::NotHeld { .. }), "{err}");
    assert!(!on_any_node(&nodes, &key), "a failed adoption left a key");

    // Forged: the resource is held, the owner token is not its holder's.
    let long = redlock.with_options(&redquorum::LockOptions {
        ttl: Duration::from_secs(30),
        ..Default::default()
    });
    let held = long.unwrap().lock("held").await.unwrap();
    common::assert_held_on(&nodes, &held, 3).await;
    let owner = held.owner().to_string();
    let real = held.ticket().to_string();
    let forged: Ticket = format!("rq1:lock:{}{}", "0".repeat(32), &real[41..])
        .parse()
        .unwrap();
    assert_eq!(forged.resource(), "held");
    let err = redlock.adopt(&forged).await.unwrap_err();
    assert!(matches!(err, Error::NotHeld { .. }), "{err}");
    assert_eq!(
        held_on(&nodes, held.key(), &owner),
        3,
        "the forged adoption moved it"
    );
    held.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adoption_needs_a_quorum_and_undoes_a_minority_move() {
    let nodes = cluster(3);
    let holder = redlock(&nodes, Duration::from_secs(30));
    let adopter = redlock(&nodes, Duration::from_secs(30));
    common::warm_up(&adopter).await;
    // One node down: two of three move it.
    let lock = holder.lock("one-down").await.unwrap();
    // The acquire returns at a quorum: the move must find it on node 0 too.
    common::assert_held_on(&nodes, &lock, 3).await;
    let ticket = lock.into_ticket();
    nodes.kill(2).unwrap();
    let adopted = adopter.adopt(&ticket).await.expect("a quorum moves it");
    let owner = adopted.owner().to_string();
    assert_eq!(held_on(&nodes, adopted.key(), &owner), 2);
    adopted.release().await.unwrap();
    nodes.restart(2).unwrap();
    common::wait_connected(&adopter, &nodes).await;
    common::wait_connected(&holder, &nodes).await;

    // A majority down: no quorum; the node that moved it releases it.
    let lock = holder.lock("two-down").await.unwrap();
    let (key, old) = (lock.key().to_owned(), lock.owner().to_string());
    let ticket = lock.into_ticket();
    nodes.kill(1).unwrap();
    nodes.kill(2).unwrap();
    let err = adopter.adopt(&ticket).await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    // Node 0 has the old holder's hold (not moved, or moved back by the
    // unwind), or nothing (expired): never the failed adopter's.
    let old_or_none = common::holds(&nodes, 0, &key, &old) || !on_any_node(&nodes, &key);
    assert!(
        old_or_none,
        "the minority move was not undone: {:?}",
        common::values(&nodes, &key)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_record_moves_with_its_owner_information_delay_and_fence() {
    let nodes = cluster(3);
    let holder = redlock(&nodes, Duration::from_secs(30))
        .with_options(&redquorum::LockOptions {
            ttl: Duration::from_secs(30),
            lock_delay: Duration::from_secs(1),
            ..Default::default()
        })
        .unwrap()
        .with_owner_info(redquorum::OwnerInfo::here("first step"));
    let lock = holder.lock("recorded").await.unwrap();
    let token = lock.fence().await.unwrap();
    let (key, old) = (lock.key().to_owned(), lock.owner().to_string());
    let everywhere = eventually(common::LANDS_WITHIN, || async {
        (0..3).all(|i| field(&nodes, i, &key, &format!("f:{old}")).is_some())
    })
    .await;
    assert!(everywhere, "the write-back did not reach every node");
    let adopted = redlock(&nodes, Duration::from_secs(30))
        .adopt(&lock.into_ticket())
        .await
        .unwrap();
    let new = adopted.owner().to_string();
    let moved = eventually(common::LANDS_WITHIN, || async {
        held_on(&nodes, &key, &new) == 3
    })
    .await;
    assert!(moved, "{:?}", common::values(&nodes, &key));
    for i in 0..3 {
        let fields = |token: &str| {
            ["h", "m", "d", "f"].map(|prefix| field(&nodes, i, &key, &format!("{prefix}:{token}")))
        };
        assert_eq!(
            fields(&old),
            [None, None, None, None],
            "node {i}: the old owner kept fields"
        );
        let [hold, meta, delay, fence] = fields(&new);
        assert!(hold.is_some(), "node {i}");
        assert!(meta.is_some_and(|m| m.contains("first step")), "node {i}");
        assert_eq!(delay.as_deref(), Some("1000"), "node {i}");
        assert_eq!(fence, Some(token.get().to_string()), "node {i}");
    }
    adopted.release().await.unwrap();
}

/// The value of `field` in the lock record at `key` on node `i`.
fn field(nodes: &redquorum_harness::Cluster, i: usize, key: &str, field: &str) -> Option<String> {
    let value = nodes.command(i, &["HGET", key, field]).ok()?;
    value.as_text()
}

/// A node the adopter knows is down (it stopped answering) still gets the
/// move, which lands when it answers again: the old holder's hold does not
/// stay there, nobody's, to its TTL. Real nodes, one stopped (SIGSTOP).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_reaches_a_node_known_down_once_it_answers_again() {
    let nodes = cluster(3);
    let holder = redlock(&nodes, Duration::from_secs(30));
    let adopter = redlock(&nodes, Duration::from_secs(30));
    common::warm_up(&adopter).await;
    let lock = holder.lock("stopped-node").await.unwrap();
    common::assert_held_on(&nodes, &lock, 3).await;
    let (key, old) = (lock.key().to_owned(), lock.owner().to_string());
    let ticket = lock.into_ticket();
    nodes.pause(2).unwrap();
    // A call node 2 leaves unanswered for the node timeout: down to the adopter.
    let _ = adopter.try_lock("elsewhere").await;
    let down = eventually(Duration::from_secs(5), || async {
        adopter.health().await[2].1.down().is_some()
    })
    .await;
    assert!(down, "node 2 never went down for the adopter");
    let adopted = adopter.adopt(&ticket).await.expect("two of three move it");
    let new = adopted.owner().to_string();
    assert!(common::holds(&nodes, 0, &key, &new) || common::holds(&nodes, 1, &key, &new));
    nodes.resume(2).unwrap();
    let moved = eventually(Duration::from_secs(10), || async {
        common::holds(&nodes, 2, &key, &new)
    })
    .await;
    assert!(
        moved,
        "node 2 kept the old holder's hold: {:?} (old {old})",
        common::values(&nodes, &key)
    );
    adopted.release().await.unwrap();
    let gone = eventually(common::LANDS_WITHIN, || async {
        !on_any_node(&nodes, &key)
    })
    .await;
    assert!(gone, "{:?}", common::values(&nodes, &key));
}

/// Two adopters of one ticket that split the nodes both fail; each moves
/// the hold back where it had moved it, so the ticket is still good and a
/// third adoption takes it. (Released instead, the hold would be lost to
/// everyone: found by the torture's hand-overs.) Real nodes: the rival's
/// move is written on two nodes by hand, and a fifth node is stopped
/// (SIGSTOP) so that neither has a quorum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopters_that_split_the_nodes_move_the_hold_back_for_the_next() {
    let nodes = cluster(5);
    let holder = redlock(&nodes, Duration::from_secs(30));
    let adopter = redlock(&nodes, Duration::from_secs(30));
    let next = redlock(&nodes, Duration::from_secs(30));
    common::warm_up(&adopter).await;
    let lock = holder.lock("split").await.unwrap();
    common::assert_held_on(&nodes, &lock, 5).await;
    let (key, old) = (lock.key().to_owned(), lock.owner().to_string());
    let ticket = lock.into_ticket();
    // A rival adopter has moved it on nodes 0 and 1 (a plain hold's record
    // is its owner token), and node 4 stops answering.
    let set = |i: usize, owner: &str| {
        let args = ["SET", key.as_str(), owner, "XX", "KEEPTTL"];
        nodes.command(i, &args).unwrap();
    };
    set(0, "rival");
    set(1, "rival");
    nodes.pause(4).unwrap();
    let err = adopter.adopt(&ticket).await.unwrap_err();
    assert!(
        matches!(err, Error::Unavailable { .. } | Error::NotHeld { .. }),
        "{err}"
    );
    // Where it moved (nodes 2 and 3), the hold is the old owner's again.
    let moved_back = eventually(common::LANDS_WITHIN, || async {
        common::holds(&nodes, 2, &key, &old) && common::holds(&nodes, 3, &key, &old)
    })
    .await;
    assert!(moved_back, "{:?} (old {old})", common::values(&nodes, &key));
    // The rival moves it back too, and node 4 answers again: its move and
    // the move back land there in order.
    set(0, &old);
    set(1, &old);
    nodes.resume(4).unwrap();
    let whole = eventually(Duration::from_secs(10), || async {
        common::held_on(&nodes, &key, &old) == 5
    })
    .await;
    assert!(whole, "{:?} (old {old})", common::values(&nodes, &key));
    let adopted = next.adopt(&ticket).await.expect("the ticket is still good");
    assert!(common::held_on(&nodes, &key, &adopted.owner().to_string()) >= 3);
    adopted.release().await.unwrap();
}

/// A lock record (a hold with owner information and a written-back token)
/// moved back by a failed adoption is the old owner's again with its fence,
/// keeping its own expiry (not the adopter's longer TTL). Real nodes, a
/// majority killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_record_moved_back_keeps_its_fence_and_its_expiry() {
    let nodes = cluster(3);
    let holder = redlock(&nodes, Duration::from_secs(10))
        .with_owner_info(redquorum::OwnerInfo::here("moved back"));
    let adopter = redlock(&nodes, Duration::from_secs(60));
    common::warm_up(&adopter).await;
    let lock = holder.lock("record-back").await.unwrap();
    let token = lock.fence().await.unwrap();
    let (key, old) = (lock.key().to_owned(), lock.owner().to_string());
    let everywhere = eventually(common::LANDS_WITHIN, || async {
        (0..3).all(|i| field(&nodes, i, &key, &format!("f:{old}")).is_some())
    })
    .await;
    assert!(everywhere, "the write-back did not reach every node");
    let ticket = lock.into_ticket();
    nodes.kill(1).unwrap();
    nodes.kill(2).unwrap();
    let err = adopter.adopt(&ticket).await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    assert!(
        common::holds(&nodes, 0, &key, &old),
        "{:?}",
        common::values(&nodes, &key)
    );
    let fence = field(&nodes, 0, &key, &format!("f:{old}"));
    assert_eq!(fence, Some(token.get().to_string()));
    let expiry: i64 = field(&nodes, 0, &key, &format!("h:{old}"))
        .and_then(|e| e.parse().ok())
        .expect("the hold's expiry");
    let left = expiry - common::node_ms(&nodes, 0).unwrap();
    assert!(
        left <= 10_000,
        "{left} ms left: the adopter's TTL, not the hold's own"
    );
}
