//! The checker must catch violations: each test breaks one of Redlock's
//! assumptions on purpose, in a fixed order of steps (not by chance), and
//! asserts the checker reports it. Positive controls show the same steps are
//! safe when the assumption holds.

mod common;
mod workload;

use std::time::Duration;

use redquorum::{Redlock, RedlockBuilder};
use redquorum_harness::{
    Cluster, History, Outcome, Persistence, ProtectedStore, Session, Verdict, check,
    faketime_support,
};

const TTL: Duration = Duration::from_secs(10);
const SHORT_TTL: Duration = Duration::from_millis(1500);

fn redlock(urls: Vec<String>, ttl: Duration) -> Redlock {
    redlock_with(urls, ttl, |builder| builder)
}

fn redlock_with(
    urls: Vec<String>,
    ttl: Duration,
    configure: impl FnOnce(RedlockBuilder) -> RedlockBuilder,
) -> Redlock {
    let builder = Redlock::builder()
        .nodes(urls)
        .ttl(ttl)
        .node_timeout(Duration::from_millis(100));
    configure(builder).build().expect("valid configuration")
}

/// Records a granted lock as a session that completed (write at grant time).
fn session(history: &History, client: usize, start: Duration, lock: &redquorum::Lock) -> Session {
    let grant = history.now();
    Session::granted(
        client,
        lock.resource(),
        &lock.owner().to_string(),
        start,
        grant,
        history.at(lock.deadline()),
    )
}

fn no_values() -> std::collections::BTreeMap<String, i64> {
    Default::default()
}

/// Waits until the client is connected to every node again (after restarts):
/// a probe lock must land on all of them.
async fn wait_connected(redlock: &Redlock, cluster: &Cluster) {
    let reached = common::eventually(Duration::from_secs(10), || async {
        let Ok(lock) = redlock.try_lock("probe").await else {
            return false;
        };
        let owner = lock.owner().to_string();
        // A straggler's acquire lands moments after the quorum was decided.
        let everywhere = common::eventually(Duration::from_millis(500), || async {
            common::held_on(cluster, lock.key(), &owner) == cluster.len()
        })
        .await;
        let _ = lock.release().await;
        everywhere
    })
    .await;
    assert!(reached, "the client did not reconnect to every node");
}

/// Client A holds a majority {0, 1} of three (node 2 was down); node 1 then
/// crashes and restarts after `restart_delay` (or rolled back to a snapshot
/// taken before A's lock); B then tries {0, 1, 2}.
/// Returns the verdict and whether B was granted.
async fn restart_story(
    persistence: Persistence,
    ttl: Duration,
    restart_delay: Duration,
) -> (Verdict, bool) {
    story(persistence, ttl, Restart::After(restart_delay)).await
}

/// How node 1 comes back in [`story`].
enum Restart {
    /// Crash, stay down this long, start again.
    After(Duration),
    /// Power loss: crash and roll the data dir back to before A's lock.
    RolledBack,
}

async fn story(persistence: Persistence, ttl: Duration, restart: Restart) -> (Verdict, bool) {
    let cluster = Cluster::start_with(3, persistence).expect("nodes");
    let redlock = redlock(cluster.urls(), ttl);
    wait_connected(&redlock, &cluster).await;
    let history = History::new();
    cluster.snapshot(1).expect("snapshot node 1");
    cluster.kill(2).expect("kill node 2");
    let start = history.now();
    let a = redlock
        .try_lock("story")
        .await
        .expect("A locks on nodes 0 and 1");
    let mut sessions = vec![session(&history, 0, start, &a)];
    cluster.restart(2).expect("node 2 back");
    match restart {
        Restart::After(delay) => cluster.restart_after(1, delay),
        Restart::RolledBack => cluster.restart_from_snapshot(1),
    }
    .expect("node 1 crash and restart");
    wait_connected(&redlock, &cluster).await;
    let start = history.now();
    let b = redlock.try_lock("story").await;
    let granted = b.is_ok();
    match &b {
        Ok(b) => sessions.push(session(&history, 1, start, b)),
        Err(e) => sessions.push(Session::refused(1, "story", start, workload::kind(e))),
    }
    let values = [(
        "story".to_owned(),
        sessions.iter().filter(|s| s.grant.is_some()).count() as i64,
    )];
    let verdict = check(&sessions, &values.into_iter().collect(), &[]);
    a.forget();
    if let Ok(b) = b {
        b.forget();
    }
    (verdict, granted)
}

#[tokio::test]
async fn restart_without_persistence_and_without_delay_is_caught_as_an_overlap() {
    let (verdict, granted) = restart_story(Persistence::None, TTL, Duration::ZERO).await;
    assert!(granted, "B should win the forgotten majority");
    assert_eq!(verdict.count("overlap"), 1, "{:?}", verdict.violations);
    let text = verdict.violations[0].to_string();
    assert!(
        text.contains("client 0") && text.contains("client 1"),
        "{text}"
    );
}

#[tokio::test]
async fn power_loss_of_unsynced_aof_writes_is_caught_as_an_overlap() {
    let (verdict, granted) = story(Persistence::AofEverySec, TTL, Restart::RolledBack).await;
    assert!(
        granted,
        "node 1 lost A's key with its last writes: B should win"
    );
    assert_eq!(verdict.count("overlap"), 1, "{:?}", verdict.violations);
}

#[tokio::test]
async fn the_same_restart_with_aof_always_is_safe() {
    let (verdict, granted) = restart_story(Persistence::AofAlways, TTL, Duration::ZERO).await;
    assert!(!granted, "node 1 remembered A's key: B must be refused");
    assert!(verdict.is_ok(), "{:?}", verdict.violations);
}

#[tokio::test]
async fn the_same_restart_after_a_delay_of_the_ttl_is_safe() {
    let (verdict, granted) = restart_story(Persistence::None, SHORT_TTL, SHORT_TTL).await;
    assert!(granted, "A's lease is over: B may lock");
    assert!(verdict.is_ok(), "{:?}", verdict.violations);
}

#[tokio::test]
async fn a_holder_ignoring_its_validity_is_caught_as_stale_write_and_lost_update() {
    let cluster = Cluster::start(3).expect("nodes");
    let store_node = Cluster::start(1).expect("store");
    let store = ProtectedStore::new(&store_node.host_port(0));
    let ttl = Duration::from_millis(600);
    let redlock = redlock(cluster.urls(), ttl);
    let history = History::new();

    // A locks and reads, then "pauses" (GC) until after its lease has ended.
    let start = history.now();
    let a = redlock.try_lock("gc").await.expect("A locks");
    let mut a_session = session(&history, 0, start, &a);
    let a_read = store.read_blocking("gc").unwrap();
    let a_deadline = a.deadline();
    a.forget();
    tokio::time::sleep_until((a_deadline + Duration::from_millis(100)).into()).await;
    // Meanwhile the keys expired: B locks, reads, writes, releases.
    let b_lock = {
        let mut attempts = 0;
        loop {
            let start = history.now();
            match redlock.try_lock("gc").await {
                Ok(lock) => break (start, lock),
                Err(e) => {
                    attempts += 1;
                    assert!(attempts < 100, "B never got the expired lock: {e}");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
    };
    let (b_start, b) = b_lock;
    let mut b_session = session(&history, 1, b_start, &b);
    let b_read = store.read_blocking("gc").unwrap();
    b_session.write_start = Some(history.now());
    store.write_blocking("gc", b_read + 1).unwrap();
    b_session.write_end = Some(history.now());
    b_session.release = Some(history.now());
    b.release().await.expect("B releases");
    // A wakes up and writes from its stale read, ignoring its validity.
    a_session.write_start = Some(history.now());
    store.write_blocking("gc", a_read + 1).unwrap();
    a_session.write_end = Some(history.now());
    a_session.release = Some(history.now());
    assert_eq!(a_session.outcome, Outcome::Completed);

    let values = store.values(&["gc".to_owned()]).unwrap();
    let verdict = check(&[a_session, b_session], &values, &[]);
    assert_eq!(verdict.count("stale-write"), 1, "{:?}", verdict.violations);
    assert_eq!(verdict.count("lost-update"), 1, "{:?}", verdict.violations);
    assert_eq!(verdict.count("overlap"), 0, "the lock itself behaved");
}

/// Two of three nodes run their clocks 10x fast, far beyond the 1% drift factor.
#[tokio::test]
async fn node_clocks_far_faster_than_the_drift_factor_are_caught_as_an_overlap() {
    if let Err(why) = faketime_support() {
        if std::env::var_os("REDQUORUM_REQUIRE_FAKETIME").is_some() {
            panic!("REDQUORUM_REQUIRE_FAKETIME is set but {why}");
        }
        eprintln!("SKIPPED node_clocks_far_faster_than_the_drift_factor: {why}");
        return;
    }
    let cluster = Cluster::builder(3)
        .fast_clock(1, 10.0)
        .fast_clock(2, 10.0)
        .start()
        .expect("nodes with fast clocks");
    // The library would refuse these nodes' votes (clock_watch.rs): turned
    // off, so that the checker is shown to catch what such clocks do.
    let redlock = redlock_with(cluster.urls(), Duration::from_secs(3), |b| {
        b.check_node_clocks(false)
    });
    let history = History::new();
    let start = history.now();
    let a = redlock.try_lock("clock").await.expect("A locks");
    let a_session = session(&history, 0, start, &a);
    // 600 ms real = 6 s on the fast nodes: A's keys (3 s TTL) are gone there.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let start = history.now();
    let b = redlock
        .try_lock("clock")
        .await
        .expect("B wins the fast majority while A is still valid");
    let b_session = session(&history, 1, start, &b);
    let verdict = check(
        &[a_session, b_session],
        &[("clock".to_owned(), 2)].into_iter().collect(),
        &[],
    );
    a.forget();
    b.forget();
    assert_eq!(verdict.count("overlap"), 1, "{:?}", verdict.violations);
}

#[tokio::test]
async fn a_lock_key_without_expiry_is_reported_as_leaked() {
    let cluster = Cluster::start(3).expect("nodes");
    cluster.command(1, &["SET", "lock:forever", "x"]).unwrap();
    let leaks = redquorum_harness::find_leaks(&cluster, "lock:*").unwrap();
    let verdict = check(&[], &no_values(), &leaks);
    assert_eq!(verdict.count("leaked"), 1);
    assert!(verdict.violations[0].to_string().contains("lock:forever"));
}
