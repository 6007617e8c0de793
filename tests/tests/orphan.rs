//! No orphan keys: a failed attempt whose acquire is stuck on a stopped
//! node (SIGSTOP) is undone there once the node resumes. The acquire is
//! already in the node's socket when we give up on it; the unwind must go
//! after it on the same connection (node/batch/batcher.rs), also when the node
//! was marked down meanwhile (node/link.rs), so the resumed node applies
//! the late acquire and then its unwind. An unwind sent first, on another
//! connection, or not at all would leave the key to its TTL.
//!
//! Settings as the torture's (node timeout 100 ms), but a 30 s TTL, so a
//! key left behind is still there when the bounded wait ends (an orphan,
//! not a key that expired). Real nodes.

mod common;

use std::time::Duration;

use common::{Record, cluster, eventually, holds, plant_holder, record, values};
use redquorum::{Error, LockOptions, Redlock};
use redquorum_harness::Cluster;

const TTL: Duration = Duration::from_secs(30);
const NODE_TIMEOUT: Duration = Duration::from_millis(100);
/// How long a resumed node may take to apply the late acquire and its
/// unwind (milliseconds when idle; room for two busy cores). Far below
/// the TTL, so only an unwind that landed can pass.
const UNDONE_WITHIN: Duration = Duration::from_secs(5);
/// Bound on waiting for the library to mark a stopped node down.
const DOWN_WITHIN: Duration = Duration::from_secs(10);

/// A Redlock on `nodes` as the torture runs it; `fencing` picks the fenced
/// acquire (hash record with a fence proposal) or the plain one (string).
async fn redlock(nodes: &Cluster, fencing: bool, wait: Duration) -> Redlock {
    redlock_timed(nodes, fencing, wait, NODE_TIMEOUT).await
}

/// [`redlock`] with its own node timeout.
async fn redlock_timed(
    nodes: &Cluster,
    fencing: bool,
    wait: Duration,
    node_timeout: Duration,
) -> Redlock {
    let redlock = Redlock::builder()
        .nodes(nodes.urls())
        .ttl(TTL)
        .node_timeout(node_timeout)
        .lock_options(LockOptions {
            ttl: TTL,
            wait,
            retry_delay: Duration::from_millis(5),
            retry_jitter: Duration::from_millis(5),
            fencing,
            ..LockOptions::default()
        })
        .build()
        .expect("valid configuration");
    common::warm_up(&redlock).await;
    redlock
}

/// Whether `redlock` sees node `index` down.
async fn is_down(redlock: &Redlock, index: usize) -> bool {
    redlock.health().await[index].1.down().is_some()
}

/// Waits (bounded) until no node holds anything for `owner` at `key`;
/// panics with every node's record otherwise.
async fn assert_undone(nodes: &Cluster, key: &str, owner: &str, what: &str) {
    let undone = eventually(UNDONE_WITHIN, || async {
        (0..nodes.len()).all(|i| !holds(nodes, i, key, owner))
    })
    .await;
    assert!(
        undone,
        "{what}: orphan key of {owner} after the node resumed: {:?}",
        values(nodes, key)
    );
}

/// The owner token of an attempt that failed: read from the live nodes
/// (the attempt wrote nothing elsewhere yet), or `None` when it left none.
fn owners(nodes: &Cluster, key: &str) -> Vec<String> {
    let mut found: Vec<String> = (0..nodes.len())
        .filter_map(|i| {
            let now = common::node_ms(nodes, i)?;
            Some(common::record(nodes, i, key).live_tokens(now))
        })
        .flatten()
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Three of five nodes stopped: the attempt cannot reach a quorum and is
/// unwound; after SIGCONT the late acquires must be undone.
async fn three_stopped_try_lock(fencing: bool) {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, fencing, Duration::ZERO).await;
    let key = redlock.key("stalled");
    (0..3).for_each(|i| nodes.pause(i).unwrap());
    let err = redlock.try_lock("stalled").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    // Our key on the two live nodes names our owner token, if it is there yet.
    let mine = owners(&nodes, &key);
    (0..3).for_each(|i| nodes.resume(i).unwrap());
    let clean = eventually(UNDONE_WITHIN, || async {
        values(&nodes, &key).iter().all(Option::is_none)
    })
    .await;
    assert!(
        clean,
        "fencing {fencing}: keys left ({mine:?}): {:?}",
        values(&nodes, &key)
    );
}

#[tokio::test]
async fn three_stopped_plain_try_lock_leaves_no_key() {
    three_stopped_try_lock(false).await;
}

#[tokio::test]
async fn three_stopped_fenced_try_lock_leaves_no_key() {
    three_stopped_try_lock(true).await;
}

/// A waiting `lock()` retries while three nodes are stopped: its first
/// attempt times out there and marks them down, later attempts skip them.
/// Every attempt's state must be gone after they resume.
#[tokio::test]
async fn a_waiting_lock_retrying_on_stopped_nodes_leaves_no_key() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, true, Duration::from_millis(800)).await;
    let key = redlock.key("retried");
    (0..3).for_each(|i| nodes.pause(i).unwrap());
    let err = redlock.lock("retried").await.unwrap_err();
    assert!(matches!(err, Error::WaitTimeout { .. }), "{err:?}");
    for i in 0..3 {
        assert!(is_down(&redlock, i).await, "node {i} not marked down");
    }
    (0..3).for_each(|i| nodes.resume(i).unwrap());
    let clean = eventually(UNDONE_WITHIN, || async {
        values(&nodes, &key).iter().all(Option::is_none)
    })
    .await;
    assert!(clean, "keys left: {:?}", values(&nodes, &key));
}

/// Nodes already marked down before the attempt: it is not sent there,
/// and the earlier attempt's acquires (stuck there) are still undone.
#[tokio::test]
async fn an_attempt_on_nodes_already_down_leaves_no_key() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, false, Duration::ZERO).await;
    let key = redlock.key("down-before");
    (0..3).for_each(|i| nodes.pause(i).unwrap());
    assert!(redlock.try_lock("down-before").await.is_err());
    let down = eventually(DOWN_WITHIN, || async {
        let mut all = true;
        for i in 0..3 {
            all &= is_down(&redlock, i).await;
        }
        all
    })
    .await;
    assert!(down, "the stopped nodes were never marked down");
    for round in 0..5 {
        let err = redlock.try_lock("down-before").await.unwrap_err();
        assert!(matches!(err, Error::Unavailable { .. }), "{round}: {err:?}");
    }
    (0..3).for_each(|i| nodes.resume(i).unwrap());
    let clean = eventually(UNDONE_WITHIN, || async {
        values(&nodes, &key).iter().all(Option::is_none)
    })
    .await;
    assert!(clean, "keys left: {:?}", values(&nodes, &key));
}

/// One node stopped, the lock contended on the others: `taken` nodes
/// answer at once, so the attempt is decided (contended) while the stopped
/// node's acquire is still in flight, or after it timed out. Either way
/// the stopped node must not keep our key once it resumes.
async fn one_stopped_contended(taken: &[usize], fencing: bool) {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, fencing, Duration::ZERO).await;
    let key = redlock.key("contended");
    for &i in taken {
        plant_holder(&nodes, i, &key, "someone-else", TTL);
    }
    nodes.pause(0).unwrap();
    let err = redlock.try_lock("contended").await.unwrap_err();
    assert!(
        matches!(err, Error::Contended { .. } | Error::Unavailable { .. }),
        "{err:?}"
    );
    let mine: Vec<String> = owners(&nodes, &key)
        .into_iter()
        .filter(|owner| owner != "someone-else")
        .collect();
    nodes.resume(0).unwrap();
    let strangers = eventually(UNDONE_WITHIN, || async {
        owners(&nodes, &key).iter().all(|o| o == "someone-else")
    })
    .await;
    assert!(
        strangers,
        "taken on {taken:?}, fencing {fencing}: our key stayed ({mine:?}): {:?}",
        values(&nodes, &key)
    );
    for owner in &mine {
        assert_undone(&nodes, &key, owner, "contended").await;
    }
}

#[tokio::test]
async fn one_stopped_node_decided_early_as_contended_leaves_no_key() {
    // Three taken: contended at once, node 0's acquire still in flight.
    one_stopped_contended(&[2, 3, 4], false).await;
    one_stopped_contended(&[2, 3, 4], true).await;
}

#[tokio::test]
async fn one_stopped_node_that_times_out_in_a_contended_attempt_leaves_no_key() {
    // Two taken: the attempt waits for node 0 until its node timeout.
    one_stopped_contended(&[3, 4], false).await;
    one_stopped_contended(&[3, 4], true).await;
}

/// Many attempts at once while three nodes are stopped: the stopped nodes'
/// batchers fill (two calls in flight, the rest queued), and queued
/// acquires and unwinds time out in the queue. Nothing may be left.
#[tokio::test]
async fn concurrent_attempts_on_stopped_nodes_leave_no_key() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, true, Duration::from_millis(400)).await;
    let names: Vec<String> = (0..24).map(|i| format!("burst-{i}")).collect();
    (0..3).for_each(|i| nodes.pause(i).unwrap());
    let attempts = names.iter().enumerate().map(|(i, name)| {
        let redlock = redlock.clone();
        async move {
            if i % 2 == 0 {
                redlock.try_lock(name).await.map(|_| ())
            } else {
                redlock.lock(name).await.map(|_| ())
            }
        }
    });
    for result in futures::future::join_all(attempts).await {
        assert!(result.is_err(), "no quorum, yet granted");
    }
    (0..3).for_each(|i| nodes.resume(i).unwrap());
    let clean = eventually(UNDONE_WITHIN, || async {
        names.iter().all(|name| {
            values(&nodes, &redlock.key(name))
                .iter()
                .all(Option::is_none)
        })
    })
    .await;
    let left: Vec<_> = names
        .iter()
        .map(|name| values(&nodes, &redlock.key(name)))
        .filter(|v| v.iter().any(Option::is_some))
        .collect();
    assert!(clean, "keys left: {left:?}");
}

/// Stop / resume cycles as the pause nemesis runs them, an attempt in each
/// stop and one right after each resume (the node may still be marked
/// down then): after every cycle no key of a failed attempt remains.
#[tokio::test]
async fn pause_cycles_leave_no_key() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, false, Duration::ZERO).await;
    let key = redlock.key("cycles");
    for cycle in 0..4 {
        (0..3).for_each(|i| nodes.pause(i).unwrap());
        assert!(redlock.try_lock("cycles").await.is_err(), "cycle {cycle}");
        (0..3).for_each(|i| nodes.resume(i).unwrap());
        // Granted or not, a lock we got is released at once.
        if let Ok(lock) = redlock.try_lock("cycles").await {
            lock.release().await.unwrap();
        }
        let clean = eventually(UNDONE_WITHIN, || async {
            values(&nodes, &key).iter().all(Option::is_none)
        })
        .await;
        assert!(
            clean,
            "cycle {cycle}: keys left: {:?}",
            values(&nodes, &key)
        );
    }
}

/// An unwind its caller stopped waiting for is still sent: here the
/// stopped nodes' connections are busy writing the acquire itself (a name
/// larger than the sockets' buffers), so the unwind waits behind it longer
/// than the node timeout. fred drops a command whose timeout passed before
/// it was written; the acquire then lands on resume with no unwind after
/// it. (Under CPU starvation a small command can wait as long.)
#[tokio::test]
async fn an_unwind_still_unwritten_at_its_timeout_is_sent() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, false, Duration::ZERO).await;
    let name = "w".repeat(12 << 20);
    let key = redlock.key(&name);
    (0..3).for_each(|i| nodes.pause(i).unwrap());
    let err = redlock.try_lock(&name).await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    (0..3).for_each(|i| nodes.resume(i).unwrap());
    let clean = eventually(UNDONE_WITHIN, || async {
        (0..nodes.len()).all(|i| matches!(record(&nodes, i, &key), Record::Absent))
    })
    .await;
    let left: Vec<bool> = (0..nodes.len())
        .map(|i| !matches!(record(&nodes, i, &key), Record::Absent))
        .collect();
    assert!(clean, "keys left on nodes (true: left): {left:?}");
}

/// A refused attempt whose unwind node 0 answers NOSCRIPT only after that
/// unwind's own timeout: node 0 granted, its script cache is flushed and
/// it is stopped before the attempt is decided (two other nodes are
/// stopped, so that waits for their node timeout). Returns with nodes 0–2
/// still stopped, the attempt refused, and our key's name.
async fn refused_with_a_late_noscript_unwind(
    nodes: &Cluster,
    name: &str,
    timeout: Duration,
) -> (Redlock, String) {
    let redlock = redlock_timed(nodes, false, Duration::ZERO, timeout).await;
    let key = redlock.key(name);
    plant_holder(nodes, 3, &key, "someone-else", TTL);
    plant_holder(nodes, 4, &key, "someone-else", TTL);
    (1..3).for_each(|i| nodes.pause(i).unwrap());
    let attempt = tokio::spawn({
        let (redlock, name) = (redlock.clone(), name.to_owned());
        async move { redlock.try_lock(&name).await.map(|_| ()) }
    });
    let granted = eventually(timeout / 2, || async {
        !matches!(record(nodes, 0, &key), Record::Absent)
    })
    .await;
    assert!(granted, "node 0 never granted");
    nodes.command(0, &["SCRIPT", "FLUSH"]).unwrap();
    nodes.pause(0).unwrap();
    assert!(
        !attempt.is_finished(),
        "decided before node 0 was stopped: nothing tested"
    );
    let err = attempt.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    (redlock, key)
}

/// Whether only the planted holders' keys are left, within [`UNDONE_WITHIN`].
async fn only_strangers_left(nodes: &Cluster, key: &str) -> bool {
    eventually(UNDONE_WITHIN, || async {
        owners(nodes, key).iter().all(|o| o == "someone-else")
    })
    .await
}

/// An unwind that answers NOSCRIPT after its caller's timeout is still
/// sent again.
#[tokio::test]
async fn an_unwind_answered_noscript_after_its_timeout_is_sent_again() {
    let nodes = cluster(5);
    let (_redlock, key) =
        refused_with_a_late_noscript_unwind(&nodes, "late-noscript", Duration::from_secs(2)).await;
    (0..3).for_each(|i| nodes.resume(i).unwrap());
    let clean = only_strangers_left(&nodes, &key).await;
    assert!(clean, "our key stayed: {:?}", values(&nodes, &key));
}

/// `shutdown()` waits for what its process still owes a node, within the
/// node timeout: here the unwind above, whose resend can only follow the
/// NOSCRIPT answer node 0 gives once it resumes — as when `redquorum
/// exec` exits right after a refused attempt. The nodes resume only once
/// `shutdown()` has begun, so only a shutdown that waits for the resend
/// removes our key.
#[tokio::test]
async fn shutdown_waits_for_an_unwind_resent_after_its_timeout() {
    let nodes = cluster(5);
    let timeout = Duration::from_secs(2);
    let (redlock, key) =
        refused_with_a_late_noscript_unwind(&nodes, "exit-after-refusal", timeout).await;
    let shutdown = tokio::spawn(async move { redlock.shutdown().await });
    (0..3).for_each(|i| nodes.resume(i).unwrap());
    tokio::time::timeout(timeout * 3, shutdown)
        .await
        .expect("shutdown() is bounded")
        .unwrap();
    let clean = only_strangers_left(&nodes, &key).await;
    assert!(clean, "our key stayed: {:?}", values(&nodes, &key));
}
