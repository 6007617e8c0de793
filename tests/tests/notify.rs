//! Release notifications: waiters wake on the holder's release, fall back to
//! backoff when a message is lost, and share one subscriber per node.
//!
//! Waking is shown by counting attempts (EVALSHA calls on the nodes) with a
//! backoff of an hour: without a notification the waiter could not get the
//! lock before the bounded waits below give up. No timing is asserted.

mod common;

use std::time::Duration;

use common::{cluster, eventually, subscribers};
use redquorum::{LockOptions, Redlock};
use redquorum_adapter::{KindLocker, LockKind, Locker};
use redquorum_harness::Cluster;

/// Long enough that a waiter relying on its backoff never retries during a test.
const HOUR: Duration = Duration::from_secs(3600);
/// Bound on every wait for a waiter to finish (generous for a loaded machine).
const WITHIN: Duration = Duration::from_secs(20);

fn redlock_on(urls: &[String], retry_delay: Duration, retry_jitter: Duration) -> Redlock {
    Redlock::builder()
        .nodes(urls)
        .ttl(Duration::from_secs(60))
        .node_timeout(Duration::from_millis(100))
        .lock_options(LockOptions {
            ttl: Duration::from_secs(60),
            wait: HOUR,
            retry_delay,
            retry_jitter,
            // These tests count script calls per lock.
            fencing: false,
            ..LockOptions::default()
        })
        .build()
        .expect("valid configuration")
}

/// The lock a spawned `lock()` task took, within `WITHIN`; `why` says what
/// should have woken it when it did not.
async fn acquired_within(
    task: tokio::task::JoinHandle<Result<redquorum::Lock, redquorum::Error>>,
    why: &str,
) -> redquorum::Lock {
    tokio::time::timeout(WITHIN, task)
        .await
        .unwrap_or_else(|_| panic!("not acquired within {WITHIN:?}: {why}"))
        .expect("task")
        .expect("acquired")
}

/// Acquires that reached node `i`: each runs one `SET` (alone, the default
/// acquire's native command; or inside the lock script).
fn attempts(cluster: &Cluster, i: usize) -> u64 {
    common::calls(cluster, i, "set")
}

/// The acquires and the script calls node `i` ran: every request of ours,
/// but a script call that carries an acquire counts twice.
fn requests(cluster: &Cluster, i: usize) -> u64 {
    attempts(cluster, i) + common::calls(cluster, i, "evalsha")
}

/// Pub/sub connections open on node `i`.
fn pubsub_clients(cluster: &Cluster, i: usize) -> usize {
    cluster
        .command(i, &["CLIENT", "LIST", "TYPE", "pubsub"])
        .ok()
        .and_then(|r| r.as_text())
        .map(|list| list.lines().filter(|l| !l.trim().is_empty()).count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiter_is_woken_by_the_release_not_by_its_backoff() {
    let cluster = cluster(1);
    let urls = cluster.urls();
    let holder = redlock_on(&urls, HOUR, Duration::ZERO);
    let held = holder.lock("notify:wake").await.expect("free resource");
    let key = held.key().to_owned();
    let (before, scripts) = (attempts(&cluster, 0), common::calls(&cluster, 0, "evalsha"));

    let waiter = redlock_on(&urls, HOUR, Duration::ZERO);
    let waiting = tokio::spawn(async move { waiter.lock("notify:wake").await });
    // Its first attempt, then (once subscribed) a second one that closes the
    // gap between the first attempt and the subscription; then it waits.
    assert!(
        eventually(WITHIN, || async {
            subscribers(&cluster, 0, &key) == 1 && attempts(&cluster, 0) >= before + 2
        })
        .await,
        "the waiter never subscribed and retried"
    );
    held.release().await.expect("release");

    let lock = acquired_within(waiting, "woken by the release: its backoff is an hour").await;
    // Exactly: 2 attempts, the attempt the release woke, and the release (a
    // script call; the refused attempts left nothing to unwind). Polling
    // would add attempts.
    assert_eq!(attempts(&cluster, 0) - before, 3);
    assert_eq!(common::calls(&cluster, 0, "evalsha") - scripts, 1);
    assert!(
        eventually(WITHIN, || async { subscribers(&cluster, 0, &key) == 0 }).await,
        "the channel stays subscribed after the last waiter left"
    );
    lock.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_notification_costs_only_the_backoff() {
    let cluster = cluster(1);
    let urls = cluster.urls();
    let holder = redlock_on(&urls, HOUR, Duration::ZERO);
    let held = holder.lock("notify:lost").await.expect("free resource");
    let key = held.key().to_owned();
    let before = attempts(&cluster, 0);

    let waiter = redlock_on(&urls, Duration::from_millis(50), Duration::from_millis(50));
    let waiting = tokio::spawn(async move { waiter.lock("notify:lost").await });
    assert!(
        eventually(WITHIN, || async {
            subscribers(&cluster, 0, &key) == 1 && attempts(&cluster, 0) >= before + 2
        })
        .await
    );
    // The key goes without a release (as when it expires): no message is
    // sent on the lock's channels.
    let heard = common::channels::Listener::on(&urls[0], &key).await;
    cluster.command(0, &["DEL", &key]).expect("DEL");
    held.forget();

    let lock = acquired_within(waiting, "the backoff retries").await;
    assert_eq!(
        heard.messages().await,
        Vec::<String>::new(),
        "no notification was sent"
    );
    lock.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_resubscribe_after_their_connection_is_killed() {
    let cluster = cluster(1);
    let urls = cluster.urls();
    let holder = redlock_on(&urls, HOUR, Duration::ZERO);
    let held = holder
        .lock("notify:reconnect")
        .await
        .expect("free resource");
    let key = held.key().to_owned();

    let waiter = redlock_on(&urls, HOUR, Duration::ZERO);
    let waiting = tokio::spawn(async move { waiter.lock("notify:reconnect").await });
    assert!(eventually(WITHIN, || async { subscribers(&cluster, 0, &key) == 1 }).await);
    cluster
        .command(0, &["CLIENT", "KILL", "TYPE", "pubsub"])
        .expect("CLIENT KILL");
    assert_eq!(subscribers(&cluster, 0, &key), 0);
    assert!(
        eventually(WITHIN, || async { subscribers(&cluster, 0, &key) == 1 }).await,
        "not resubscribed after the reconnect"
    );
    held.release().await.expect("release");

    let lock = acquired_within(
        waiting,
        "woken on the new connection: its backoff is an hour",
    )
    .await;
    lock.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_on_many_resources_share_one_subscriber_per_node() {
    let cluster = cluster(3);
    let urls = cluster.urls();
    let holder = redlock_on(&urls, HOUR, Duration::ZERO);
    let waiter = redlock_on(&urls, HOUR, Duration::ZERO);
    let mut held = Vec::new();
    let mut waiting = Vec::new();
    for i in 0..4 {
        let resource = format!("notify:shared:{i}");
        held.push(holder.lock(&resource).await.expect("free resource"));
        let waiter = waiter.clone();
        waiting.push(tokio::spawn(async move { waiter.lock(&resource).await }));
    }
    for lock in &held {
        let key = lock.key().to_owned();
        let everywhere = || async { (0..3).all(|i| subscribers(&cluster, i, &key) == 1) };
        assert!(eventually(WITHIN, everywhere).await);
    }
    for i in 0..cluster.len() {
        assert_eq!(
            pubsub_clients(&cluster, i),
            1,
            "node {i}: one subscriber connection"
        );
    }
    for lock in held {
        lock.release().await.expect("release");
    }
    for task in waiting {
        let lock = acquired_within(task, "woken by the release").await;
        lock.release().await.expect("release");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiter_is_woken_while_a_subscriber_node_is_down() {
    let cluster = cluster(3);
    let urls = cluster.urls();
    cluster.kill(0).expect("kill node 0");
    let holder = redlock_on(&urls, HOUR, Duration::ZERO);
    let held = holder
        .lock("notify:down")
        .await
        .expect("a quorum of 2 of 3 is up");
    let key = held.key().to_owned();

    let waiter = redlock_on(&urls, HOUR, Duration::ZERO);
    let waiting = tokio::spawn(async move { waiter.lock("notify:down").await });
    assert!(
        eventually(WITHIN, || async {
            subscribers(&cluster, 1, &key) == 1 && subscribers(&cluster, 2, &key) == 1
        })
        .await
    );
    let before: Vec<u64> = (1..3).map(|i| requests(&cluster, i)).collect();
    held.release().await.expect("release on the live nodes");

    let lock = acquired_within(
        waiting,
        "woken by the live nodes' messages: its backoff is an hour",
    )
    .await;
    for (i, before) in (1..3).zip(before) {
        // The release, at most one attempt woken by each live node's
        // message before the release landed on both (plus its unwind), and
        // the winning attempt: no polling.
        let delta = requests(&cluster, i) - before;
        assert!((2..=6).contains(&delta), "node {i}: {delta} calls");
    }
    lock.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_of_the_same_redlock_takes_over_right_behind_the_release() {
    // Holder and waiter share one Redlock: the waiter lines up behind the
    // hold without trying against it (wait/first_try.rs), the release wakes
    // it as soon as it is queued, and its attempt follows the release on the
    // same connections, so it must succeed at once (no failed attempt).
    let cluster = cluster(3);
    let redlock = redlock_on(&cluster.urls(), HOUR, Duration::ZERO);
    let held = redlock.lock("notify:local").await.expect("free resource");
    let key = held.key().to_owned();
    let before: Vec<u64> = (0..3).map(|i| requests(&cluster, i)).collect();
    let waiter = redlock.clone();
    let waiting = tokio::spawn(async move { waiter.lock("notify:local").await });
    assert!(
        eventually(WITHIN, || async {
            (0..3).all(|i| subscribers(&cluster, i, &key) == 1)
        })
        .await,
        "the waiter never subscribed"
    );
    held.release().await.expect("release");
    let lock = acquired_within(waiting, "woken by the release: its backoff is an hour").await;
    // The quorum may be decided before the last node answered; its acquire,
    // queued behind the release on the same connection, lands right after.
    let owner = lock.owner().to_string();
    assert!(
        eventually(WITHIN, || async {
            common::held_on(&cluster, &key, &owner) == 3
        })
        .await,
        "the waiter's key is not on every node"
    );
    for (i, before) in before.into_iter().enumerate() {
        // The release and the winning attempt, never polling (`requests`
        // counts a call of the release and the winning attempt together as
        // two: batch.rs tests that hand-off window).
        let delta = requests(&cluster, i) - before;
        assert_eq!(delta, 2, "node {i}: {delta} calls");
    }
    lock.release().await.expect("release");
}

/// Lock records each operation of `kind` reads (one HGETALL each in the
/// script): a semaphore's permit and its slot, or the one resource.
fn records_per_operation(kind: LockKind) -> u64 {
    if kind == LockKind::Semaphore { 2 } else { 1 }
}

/// Takes the free resource with `kind` (the blocking acquire the workloads
/// use, `KindLocker`) in a task that gives it back when told to.
async fn hold(
    locker: KindLocker,
    name: &'static str,
) -> (
    tokio::task::JoinHandle<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    let (taken_tx, taken) = tokio::sync::oneshot::channel();
    let (release, release_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let grant = locker.acquire(name).await.expect("free");
        let _ = taken_tx.send(());
        let _ = release_rx.await;
        locker.release(grant.held).await.expect("release");
    });
    taken.await.expect("the resource is free");
    (task, release)
}

/// Takes the resource (waiting), and gives it back at once.
async fn take_and_give_back(locker: KindLocker, name: &'static str) {
    let grant = locker.acquire(name).await.expect("taken");
    locker.release(grant.held).await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_waiters_of_a_semaphore_and_of_one_resource_sets_take_turns() {
    // Ten local waiters and ten hand-offs. Waiters that take turns (only the
    // head of the line tries after a release) cost about one attempt each;
    // waiters that all listen would each try again on every release:
    // 10 + 9 + ... + 1 attempts. Counted as lock records read by the script
    // (HGETALL), which group commit cannot merge away. The backoff is an
    // hour, so every attempt after the first is woken by a release.
    const WAITERS: u64 = 10;
    let cluster = cluster(3);
    let name = "notify:turns";
    for kind in [LockKind::Semaphore, LockKind::AnyOf, LockKind::AllOf] {
        let redlock = redlock_on(&cluster.urls(), HOUR, Duration::ZERO);
        let locker = KindLocker::new(redlock, kind);
        let before = common::calls(&cluster, 0, "hgetall");
        let (held, release) = hold(locker.clone(), name).await;
        let waiters: Vec<_> = (0..WAITERS)
            .map(|_| tokio::spawn(take_and_give_back(locker.clone(), name)))
            .collect();
        // Every waiter has tried once or lined up behind one that did.
        assert!(
            eventually(WITHIN, || async {
                (0..3).all(|i| subscribers(&cluster, i, "lock:{notify:turns}") == 1)
            })
            .await,
            "{kind:?}: the waiters never subscribed"
        );
        release.send(()).expect("holder waits");
        held.await.expect("holder");
        for waiter in waiters {
            tokio::time::timeout(WITHIN, waiter)
                .await
                .unwrap_or_else(|_| panic!("{kind:?}: a waiter was never woken"))
                .expect("waiter");
        }
        let records = common::calls(&cluster, 0, "hgetall") - before;
        let attempts = records / records_per_operation(kind);
        // Taking turns: the holder's acquire and release; per waiter a first
        // attempt, its winning attempt and its release; the first head's
        // second try; and per hand-off at most one try on a release message
        // that came while the previous head was trying (a line keeps one
        // wake-up), with its unwind: 3 + 5 × 10 = 53. Listening: 2 + 10 first
        // attempts + 55 woken + 10 releases = 77 (and a listener that is
        // trying when the release comes misses it, and waits its backoff).
        assert!(
            attempts <= 3 + 5 * WAITERS,
            "{kind:?}: {attempts} operations for {WAITERS} hand-offs"
        );
    }
}
