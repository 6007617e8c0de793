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
    common::wait_connected(&redlock, &cluster).await;
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
    common::wait_connected(&redlock, &cluster).await;
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
    a_session.read = Some(a_read);
    a_session.read_at = Some(history.now());
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
    b_session.read = Some(b_read);
    b_session.read_at = Some(history.now());
    b_session.write_start = Some(history.now());
    b_session.wrote = Some(b_read + 1);
    store.write_blocking("gc", b_read + 1).unwrap();
    b_session.write_end = Some(history.now());
    b_session.release = Some(history.now());
    b.release().await.expect("B releases");
    // A wakes up and writes from its stale read, ignoring its validity.
    a_session.write_start = Some(history.now());
    a_session.wrote = Some(a_read + 1);
    store.write_blocking("gc", a_read + 1).unwrap();
    a_session.write_end = Some(history.now());
    a_session.release = Some(history.now());
    assert_eq!(a_session.outcome, Outcome::Completed);

    let values = store.values(&["gc".to_owned()]).unwrap();
    let verdict = check(&[a_session, b_session], &values, &[]);
    assert_eq!(verdict.count("stale-write"), 1, "{:?}", verdict.violations);
    assert_eq!(verdict.count("lost-update"), 1, "{:?}", verdict.violations);
    assert_eq!(verdict.count("counter"), 1, "{:?}", verdict.violations);
    assert_eq!(verdict.count("overlap"), 0, "the lock itself behaved");
    // The lost update names both sessions: B's update lost, overwritten by A.
    let lost = verdict
        .violations
        .iter()
        .find(|v| v.kind() == "lost-update")
        .unwrap();
    let text = lost.to_string();
    assert!(
        text.contains("client 1") && text.contains("client 0"),
        "{text}"
    );
}

/// The same GC pause against a fenced store: A's stale write is refused,
/// nothing is lost, and a stale write the store did accept is named.
#[tokio::test]
async fn a_fenced_store_refuses_the_paused_holders_stale_write() {
    let store_node = Cluster::start(1).expect("store");
    let store = ProtectedStore::new(&store_node.host_port(0));
    store.reset_blocking("gc").unwrap();
    // A (token 10) reads; B (token 11) reads and writes; A writes last.
    assert_eq!(store.read_fenced_blocking("gc", Some(10)).unwrap(), Some(0));
    assert_eq!(store.read_fenced_blocking("gc", Some(11)).unwrap(), Some(0));
    assert!(store.write_fenced_blocking("gc", 1, Some(11)).unwrap());
    assert!(
        !store.write_fenced_blocking("gc", 1, Some(10)).unwrap(),
        "stale token accepted"
    );
    assert_eq!(store.read_blocking("gc").unwrap(), 1);
    // Had the store accepted it, the checker names it.
    let ms = Duration::from_millis;
    let mut b = Session::granted(1, "gc", "b", ms(0), ms(10), ms(500));
    (b.fence, b.read, b.read_at, b.wrote) = (Some(11), Some(0), Some(ms(11)), Some(1));
    (b.write_start, b.write_end) = (Some(ms(12)), Some(ms(13)));
    let mut a = Session::granted(0, "gc", "a", ms(0), ms(1), ms(5));
    (a.fence, a.read, a.read_at, a.wrote) = (Some(10), Some(0), Some(ms(2)), Some(1));
    (a.write_start, a.write_end) = (Some(ms(20)), Some(ms(21)));
    let verdict = check(&[a, b], &[("gc".to_owned(), 1)].into_iter().collect(), &[]);
    assert_eq!(verdict.count("stale-write"), 1, "{:?}", verdict.violations);
    assert_eq!(verdict.count("lost-update"), 1, "{:?}", verdict.violations);
}

/// A hold left behind by an attempt nobody unwound (planted in the
/// library's lock record, as a missing unwind would leave it) is seen by the
/// key audit and named, long before its TTL would hide it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_left_by_an_attempt_that_was_never_unwound_is_an_orphan() {
    use redquorum_harness::{AuditConfig, Evidence, KeyAudit, check_evidence};
    let cluster = std::sync::Arc::new(Cluster::start(3).expect("nodes"));
    let ttl = Duration::from_secs(2);
    let mut config = AuditConfig::new(ttl);
    config.min_age = Duration::from_millis(200);
    // 800 ms left under a 2 s TTL: the hold was set 1.2 s ago, past the 1 s slack.
    let now = common::node_ms(&cluster, 1).expect("node time");
    let expiry = (now + 800).to_string();
    cluster
        .command(
            1,
            &["HSET", "lock:{orphan}", "kind", "lock", "h:nobody", &expiry],
        )
        .unwrap();
    cluster
        .command(1, &["PEXPIRE", "lock:{orphan}", "800"])
        .unwrap();
    let audit = KeyAudit::start(cluster.clone(), config);
    let seen = tokio::task::spawn_blocking(move || {
        assert!(
            audit.wait_rounds(1, Duration::from_secs(5)),
            "the audit never read the nodes"
        );
        audit.stop()
    })
    .await
    .unwrap();
    let values = no_values();
    let evidence = Evidence {
        keys: &seen,
        ..Evidence::new(&[], &values)
    };
    let verdict = check_evidence(&evidence);
    assert_eq!(verdict.count("orphan-key"), 1, "{seen:?}");
    assert!(verdict.violations[0].to_string().contains("never granted"));
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
    // The library would refuse these nodes' votes (health/clock_watch.rs): turned
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

/// Audits the cluster once (at least one full read of every node, after
/// `settle` has returned) with no minimum age, and returns every (key, owner) seen.
async fn audit_once(cluster: &std::sync::Arc<Cluster>, ttl: Duration) -> Vec<(String, String)> {
    use redquorum_harness::{AuditConfig, KeyAudit};
    let mut config = AuditConfig::new(ttl);
    config.min_age = Duration::ZERO;
    let audit = KeyAudit::start(cluster.clone(), config);
    let seen = tokio::task::spawn_blocking(move || {
        assert!(
            audit.wait_rounds(2, Duration::from_secs(5)),
            "the audit never read the nodes"
        );
        audit.stop()
    })
    .await
    .unwrap();
    let mut pairs: Vec<(String, String)> = seen.into_iter().map(|l| (l.key, l.owner)).collect();
    pairs.sort();
    pairs.dedup();
    pairs
}

/// A hold of a lock type with a key and an owner token.
trait Hold {
    fn key_and_owner(&self) -> (String, String);
}

impl Hold for redquorum::Lock {
    fn key_and_owner(&self) -> (String, String) {
        (self.key().to_owned(), self.owner().to_string())
    }
}

impl Hold for redquorum::ReadLock {
    fn key_and_owner(&self) -> (String, String) {
        (self.key().to_owned(), self.owner().to_string())
    }
}

/// A hold from `take` that landed on every node. A straggler's acquire
/// lands moments after the quorum was decided, or, under load, never: queued
/// behind a call still in flight on a slow node (the fencing rounds' last
/// ones), it is dropped once the quorum decided. So a hold not on every
/// node within 2 s is dropped (released in the background) and taken
/// again, up to 5 times.
async fn on_every_node<H: Hold>(cluster: &Cluster, mut take: impl AsyncFnMut() -> H) -> H {
    for _ in 0..5 {
        let held = take().await;
        let (key, owner) = held.key_and_owner();
        let landed = common::eventually(Duration::from_secs(2), || async {
            common::held_on(cluster, &key, &owner) == cluster.len()
        })
        .await;
        if landed {
            return held;
        }
    }
    panic!("no hold landed on every node in 5 tries");
}

/// The audit reads the library's own lock record (one hash per name, each
/// hold a `h:<token>` field; the fence counter beside it): every live hold
/// is an owner, of any kind, and neither the record's other fields nor the
/// fence counter are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_audit_sees_every_hold_of_the_librarys_lock_records() {
    let cluster = std::sync::Arc::new(Cluster::start(3).expect("nodes"));
    let redlock = redlock(cluster.urls(), TTL);
    // Connected to every node first: under load a node still connecting is
    // not asked, and its hold never comes (seen beside two CPU-bound processes).
    common::wait_connected(&redlock, &cluster).await;
    let plain = on_every_node(&cluster, async || {
        redlock.try_lock("plain").await.expect("plain lock")
    })
    .await;
    plain
        .fence()
        .await
        .expect("a fencing token (writes the fence counter)");
    let reader_a = on_every_node(&cluster, async || {
        redlock.try_read_lock("shared").await.expect("reader A")
    })
    .await;
    let reader_b = on_every_node(&cluster, async || {
        redlock.try_read_lock("shared").await.expect("reader B")
    })
    .await;
    let everywhere = [
        (plain.key(), plain.owner().to_string()),
        (reader_a.key(), reader_a.owner().to_string()),
        (reader_b.key(), reader_b.owner().to_string()),
    ];
    let seen = audit_once(&cluster, TTL).await;
    let mut expected: Vec<(String, String)> = everywhere
        .iter()
        .map(|(key, owner)| ((*key).to_owned(), owner.clone()))
        .collect();
    expected.sort();
    assert_eq!(seen, expected);
    assert!(
        common::pttl(&cluster, 0, &redlock.fence_key("plain")) > 0,
        "no fence counter"
    );
    plain.forget();
    reader_a.forget();
    reader_b.forget();
}

/// A clock jump on a node moves each hold's expiry in the lock record, not
/// only the key's TTL: of two readers, the one with less time left than the
/// jump is gone on that node (the library decides by those expiries), the
/// other is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_jump_expires_the_holds_it_passes_in_a_lock_record() {
    let cluster = std::sync::Arc::new(Cluster::start(3).expect("nodes"));
    let short = redlock(cluster.urls(), Duration::from_secs(3));
    let long = redlock(cluster.urls(), Duration::from_secs(30));
    common::wait_connected(&short, &cluster).await;
    common::wait_connected(&long, &cluster).await;
    let brief = short.try_read_lock("shared").await.expect("brief reader");
    let lasting = long.try_read_lock("shared").await.expect("lasting reader");
    let key = brief.key().to_owned();
    for owner in [brief.owner().to_string(), lasting.owner().to_string()] {
        let landed = common::eventually(Duration::from_secs(5), || async {
            common::held_on(&cluster, &key, &owner) == cluster.len()
        })
        .await;
        assert!(landed, "{owner} never held {key} on every node");
    }
    for node in 0..cluster.len() {
        let touched = cluster
            .clock_jump(node, Duration::from_secs(5), "lock:*")
            .expect("clock jump");
        // The record only: an acquire reads the fence counter, never creates it.
        assert_eq!(touched, 1, "node {node}: the lock record");
    }
    let seen = audit_once(&cluster, Duration::from_secs(30)).await;
    assert_eq!(seen, vec![(key.clone(), lasting.owner().to_string())]);
    assert_eq!(common::hold_counts(&cluster, &key), vec![1; cluster.len()]);
    let left = common::pttl(&cluster, 0, &key);
    assert!(
        (0..=25_000).contains(&left),
        "the key's TTL did not shrink: {left} ms"
    );
    brief.forget();
    lasting.forget();
}

/// The audit follows a hold it remembers: the first read that misses it
/// ends that life (`gone`), and the same owner's hold seen there again
/// starts another (`back_after`, the last read that missed it), which the
/// hold rules of the checker judge.
#[test]
fn the_key_audit_records_a_hold_gone_from_a_node_and_back() {
    use redquorum_harness::{AuditConfig, KeyAudit};
    let cluster = std::sync::Arc::new(Cluster::start(1).expect("node"));
    let set = || {
        cluster
            .command(0, &["SET", "lock:{r}", "a", "PX", "10000"])
            .expect("set")
    };
    set();
    let mut config = AuditConfig::new(TTL);
    config.min_age = Duration::ZERO;
    let audit = KeyAudit::start(cluster.clone(), config);
    let rounds = |audit: &KeyAudit| assert!(audit.wait_rounds(2, Duration::from_secs(5)));
    rounds(&audit);
    cluster.command(0, &["DEL", "lock:{r}"]).expect("del");
    rounds(&audit);
    set();
    rounds(&audit);
    let lives = audit.stop();
    assert_eq!(lives.len(), 2, "{lives:?}");
    let (first, second) = (&lives[0], &lives[1]);
    assert_eq!((first.owner.as_str(), second.owner.as_str()), ("a", "a"));
    let gone = first.gone.expect("the first life ended");
    assert!(first.back_after.is_none() && second.gone.is_none());
    let back_after = second.back_after.expect("the second came back");
    assert!(first.last_seen < gone && gone <= back_after && back_after < second.first_seen);
}
