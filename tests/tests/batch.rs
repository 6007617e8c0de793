//! Group commit: a node's plain-lock operations queue while it has calls in
//! flight and then go out as one script call, each keeping its own result,
//! order and unwind. A paused node (SIGSTOP) makes the queue deterministic:
//! what is sent to it waits in its socket, what is not waits in the queue.

mod common;

use std::time::Duration;

use common::{calls, cluster, eventually};
use redquorum::{Error, LockOptions, NodeOutcome, Redlock};

/// Calls of ours one node may have in flight before operations queue
/// (`batch::MAX_IN_FLIGHT` in the library).
const IN_FLIGHT: usize = 2;

fn redlock_on(urls: &[String]) -> Redlock {
    Redlock::builder()
        .nodes(urls)
        .ttl(Duration::from_secs(60))
        // Longer than the pause, so nothing here times out: the counts are exact.
        .node_timeout(Duration::from_secs(10))
        .lock_options(LockOptions {
            ttl: Duration::from_secs(60),
            // One attempt per lock, no fence rounds: these tests count script calls.
            wait: Duration::ZERO,
            fencing: false,
            ..LockOptions::default()
        })
        .build()
        .expect("valid configuration")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_queued_behind_a_paused_node_go_out_in_one_call_in_order() {
    let nodes = cluster(3);
    let redlock = redlock_on(&nodes.urls());
    // Connect and load the scripts before counting.
    common::warm_up(&redlock).await;
    nodes.command(0, &["CONFIG", "RESETSTAT"]).unwrap();

    nodes.pause(0).unwrap();
    // Each lock is won on nodes 1 and 2. On the paused node 0 the first two
    // acquires are sent (its two in-flight slots); the other eight queue, and
    // are abandoned when their lock is decided without node 0.
    let mut locks = Vec::new();
    for i in 0..10 {
        locks.push(redlock.try_lock(&format!("queued-{i}")).await.unwrap());
    }
    // One poll queues all ten releases on node 0 (its slots are still taken).
    let releases = futures::future::join_all(locks.into_iter().map(|lock| lock.release()));
    let mut releases = std::pin::pin!(releases);
    assert!(futures::poll!(releases.as_mut()).is_pending());
    nodes.resume(0).unwrap();
    let released = releases.await;

    // Each release has its own result, given once a quorum removed the
    // hold: on nodes 1 and 2 (node 0 answers after them, if at all).
    let counts: Vec<usize> = released.into_iter().map(Result::unwrap).collect();
    assert!(counts.iter().all(|&n| n >= 2), "{counts:?}");
    // Node 0 ran the two acquires sent before (each alone on the
    // connection: a native SET), then the ten releases in one script call;
    // the abandoned acquires were never sent (each acquire of a free lock
    // writes its record with one SET). The first two releases also deleted
    // the key their acquire had set on node 0 (they ran after it).
    let ran = eventually(Duration::from_secs(10), || async {
        calls(&nodes, 0, "evalsha") == 1 && calls(&nodes, 0, "del") == IN_FLIGHT as u64
    })
    .await;
    assert!(
        ran,
        "node 0 ran {} script calls and {} deletes",
        calls(&nodes, 0, "evalsha"),
        calls(&nodes, 0, "del")
    );
    assert_eq!(calls(&nodes, 0, "set"), IN_FLIGHT as u64);
    for i in 0..3 {
        assert_eq!(nodes.keys(i, "*queued-*").unwrap(), vec![], "node {i}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_of_another_type_fails_only_its_own_operation_in_a_batch() {
    let nodes = cluster(3);
    let redlock = redlock_on(&nodes.urls());
    common::warm_up(&redlock).await;
    // The lock key of "bad" holds a list on nodes 0 and 1 (neither a plain
    // hold's string nor a lock record): reading the lock fails there
    // (WRONGTYPE).
    let bad_key = redlock.key("bad");
    for i in 0..2 {
        nodes.command(i, &["RPUSH", &bad_key, "v"]).unwrap();
    }
    nodes.command(0, &["CONFIG", "RESETSTAT"]).unwrap();
    // Fill node 0's and node 1's slots with two locks' acquires, so "bad" and
    // "good" queue behind them and share one call on each. Each lock's
    // first poll sends (or queues) its acquire on every node at once, so
    // seeing its key on the unpaused node 2 shows it reached nodes 0 and 1.
    for i in 0..2 {
        nodes.pause(i).unwrap();
    }
    let spawn_lock = |resource: &'static str| {
        let redlock = redlock.clone();
        tokio::spawn(async move { redlock.try_lock(resource).await })
    };
    let on_node_2 = |resource: &str| {
        let key = redlock.key(resource);
        let nodes = &nodes;
        move || {
            let key = key.clone();
            // Node 2 only: a read from a paused node would block.
            async move { nodes.command(2, &["EXISTS", &key]).unwrap().as_int() == Some(1) }
        }
    };
    let early = [spawn_lock("early-0"), spawn_lock("early-1")];
    for resource in ["early-0", "early-1"] {
        assert!(eventually(Duration::from_secs(5), on_node_2(resource)).await);
    }
    let (bad, good) = (spawn_lock("bad"), spawn_lock("good"));
    assert!(eventually(Duration::from_secs(5), on_node_2("good")).await);
    for i in 0..2 {
        nodes.resume(i).unwrap();
    }
    let (bad, good) = (bad.await.unwrap(), good.await.unwrap());
    // Node 0 ran the two early acquires (each alone: a native SET), then
    // "bad" and "good" in one script call, then bad's unwind (alone: the
    // plain release's own script, which leaves a key that is not a string
    // to the lock script's release, a call more). Four SETs: the early two,
    // bad's (refused by the list) and good's.
    assert_eq!(calls(&nodes, 0, "evalsha"), 3);
    assert_eq!(calls(&nodes, 0, "set"), 4);
    for lock in early {
        lock.await.unwrap().unwrap().release().await.unwrap();
    }

    let good = good.expect("the good lock is taken in the same calls");
    // A quorum at least: once two nodes granted it, the third node's queued
    // acquire may have been dropped unsent.
    assert!(good.release().await.unwrap() >= 2);
    let Err(Error::Unavailable { outcomes, .. }) = &bad else {
        panic!("expected unavailable, got {bad:?}");
    };
    for (node, outcome) in outcomes.iter().take(2) {
        let NodeOutcome::Failed(error) = outcome else {
            panic!("{node}: expected a failure, got {outcome}");
        };
        assert!(error.to_string().contains("WRONGTYPE"), "{error}");
    }
    // The foreign list is untouched.
    assert_eq!(
        nodes.command(0, &["LLEN", &bad_key]).unwrap().as_int(),
        Some(1)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_local_hand_off_sends_the_release_and_the_next_acquire_in_one_call() {
    // One node: an attempt there is exactly one call (no quorum decided
    // before a straggler answers, so no unwinds), which makes the counts exact.
    let nodes = cluster(1);
    let waits = LockOptions {
        ttl: Duration::from_secs(60),
        wait: Duration::from_secs(3600),
        // Only the release can wake the waiter: its backoff is an hour.
        retry_delay: Duration::from_secs(3600),
        retry_jitter: Duration::ZERO,
        fencing: false,
        ..LockOptions::default()
    };
    let redlock = redlock_on(&nodes.urls()).with_options(&waits).unwrap();
    let held = redlock.lock("hand-off").await.unwrap();
    let key = held.key().to_owned();
    // Each attempt runs one SET (alone: the native acquire; or in the script).
    let attempts = |nodes: &redquorum_harness::Cluster| calls(nodes, 0, "set");
    let before = attempts(&nodes);
    let waiter = redlock.clone();
    let waiting = tokio::spawn(async move { waiter.lock("hand-off").await });
    // The waiter lines up behind the hold this process won, without trying
    // against it (wait/first_try.rs): it subscribes, then sleeps until woken.
    let parked = eventually(Duration::from_secs(5), || async {
        common::subscribers(&nodes, 0, &key) == 1
    })
    .await;
    assert!(parked, "the waiter never subscribed");
    assert_eq!(
        attempts(&nodes),
        before,
        "the waiter tried against the hold"
    );
    // The node has confirmed the subscription, but on this one-thread
    // runtime the waiter reads that answer only when the runtime next polls
    // its sockets. Until then it is not parked and the release cannot wake
    // it into the window. Sleeping lets the runtime read the answer that is
    // already there.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (before, scripts) = (attempts(&nodes), calls(&nodes, 0, "evalsha"));
    let heard = common::channels::Listener::on(&nodes.urls()[0], &key).await;

    assert_eq!(held.release().await.unwrap(), 1);
    let lock = waiting.await.unwrap().expect("woken by the release");
    // One call carried both the release and the winning acquire, and
    // announced nothing: the lock was never free (alone, the release would
    // have announced it, and the acquire gone as a native SET).
    assert_eq!(calls(&nodes, 0, "evalsha") - scripts, 1);
    assert_eq!(attempts(&nodes) - before, 1);
    assert_eq!(heard.messages().await, Vec::<String>::new());
    let owner = lock.owner().to_string();
    assert_eq!(common::held_on(&nodes, &key, &owner), 1);
    lock.release().await.unwrap();
}

/// Every operation in a shared call gets its own true result. Under
/// `maxmemory` with `noeviction`, an acquire fails with OOM; a release
/// queued behind it in the same call must still run and say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operation_that_fails_does_not_fail_the_others_in_its_call() {
    let nodes = cluster(1);
    let redlock = redlock_on(&nodes.urls());
    common::warm_up(&redlock).await;
    let held = redlock.try_lock("held-before-oom").await.unwrap();
    let key = held.key().to_owned();
    nodes
        .command(0, &["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        .unwrap();
    nodes
        .command(0, &["CONFIG", "SET", "maxmemory", "1"])
        .unwrap();
    nodes.pause(0).unwrap();
    // Two acquires take the node's in-flight slots; the next acquire and the
    // release queue behind them, in that order, and leave as one call.
    let early = futures::future::join(redlock.try_lock("early-0"), redlock.try_lock("early-1"));
    let mut early = std::pin::pin!(early);
    assert!(futures::poll!(early.as_mut()).is_pending());
    let queued = futures::future::join(redlock.try_lock("refused-by-oom"), held.release());
    let mut queued = std::pin::pin!(queued);
    assert!(futures::poll!(queued.as_mut()).is_pending());
    nodes.resume(0).unwrap();
    let _ = early.await;
    let (acquire, release) = queued.await;
    nodes
        .command(0, &["CONFIG", "SET", "maxmemory", "0"])
        .unwrap();
    let Err(Error::Unavailable { outcomes, .. }) = &acquire else {
        panic!("the acquire under OOM: {acquire:?}");
    };
    assert!(outcomes.to_string().contains("1 failed"), "{outcomes}");
    assert_eq!(release.unwrap(), 1, "the release ran and must say so");
    assert_eq!(
        nodes.command(0, &["EXISTS", &key]).unwrap().as_int(),
        Some(0)
    );
}
