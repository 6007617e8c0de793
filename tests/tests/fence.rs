//! Fencing tokens on real nodes: strictly increasing across holders, partial
//! attempts, outages and a node that lost its data; the naive "max of INCRs"
//! going backwards under the same faults; stale writes refused.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{LANDS_WITHIN, cluster, eventually, redlock, strings, values};
use fred::prelude::{ClientLike, Config, KeysInterface};
use redquorum::{Error, FenceToken, FencedWriteError, FencedWriter, LockOptions, Redlock};
use redquorum_harness::{Cluster, Persistence};

/// A handle whose `lock()` waits up to 10 s (node restarts, fred reconnects).
fn patient(cluster: &Cluster, ttl: Duration) -> Redlock {
    redlock(cluster, ttl)
        .with_options(&LockOptions {
            ttl,
            wait: Duration::from_secs(10),
            retry_delay: Duration::from_millis(20),
            retry_jitter: Duration::from_millis(20),
            ..Default::default()
        })
        .unwrap()
}

async fn fence_of(lock: &redquorum::Lock) -> FenceToken {
    lock.fence().await.expect("fencing is on by default")
}

/// The fence counter the library keeps next to the lock key.
fn fence_key(redlock: &Redlock, resource: &str) -> String {
    redlock.fence_key(resource)
}

/// The naive design (docs/fencing.md, "Why it is monotonic"): every node the attempt reaches INCRs its
/// counter; the token is the max over the nodes that answered, if they are a quorum.
fn naive_attempt(cluster: &Cluster, counter: &str) -> Option<i64> {
    let answers: Vec<i64> = (0..cluster.len())
        .filter(|&i| cluster.is_running(i))
        .filter_map(|i| cluster.command(i, &["INCR", counter]).ok()?.as_int())
        .collect();
    (answers.len() > cluster.len() / 2).then(|| *answers.iter().max().unwrap())
}

#[tokio::test]
async fn tokens_strictly_increase_from_holder_to_holder_and_are_written_back() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let mut last = FenceToken::new(0);
    for round in 0..5 {
        let lock = redlock.lock("ledger").await.unwrap();
        let token = fence_of(&lock).await;
        assert!(token > last, "round {round}: {token} after {last}");
        // Written back to (at least) a quorum before the token was returned.
        let stored = strings(&nodes, &fence_key(&redlock, "ledger"));
        let at_token = stored
            .iter()
            .filter(|v| v.as_deref() == Some(&*token.to_string()))
            .count();
        assert!(at_token >= 2, "round {round}: {token} stored as {stored:?}");
        last = token;
        lock.release().await.unwrap();
    }
}

#[tokio::test]
async fn contending_holders_see_increasing_tokens_in_holding_order() {
    let nodes = cluster(3);
    let redlock = patient(&nodes, Duration::from_secs(5));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (redlock, seen) = (redlock.clone(), Arc::clone(&seen));
            tokio::spawn(async move {
                for _ in 0..3 {
                    let lock = redlock.lock("contended").await.unwrap();
                    let token = fence_of(&lock).await;
                    seen.lock().unwrap().push(token);
                    lock.release().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 12);
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "tokens in holding order: {seen:?}"
    );
}

/// The naive design's counterexample (docs/fencing.md), run on real nodes: partial attempts inflate
/// node 0's counter, then a holder's quorum misses node 0. The nodes keep
/// their data (AOF), so only the outages matter.
#[tokio::test]
async fn naive_max_of_incr_goes_backwards_where_fenced_tokens_increase() {
    let nodes = Cluster::start_with(3, Persistence::AofAlways).unwrap();
    let redlock = patient(&nodes, Duration::from_secs(5));
    let naive = "naive:fence:transfer";

    // Nodes 1 and 2 are down: attempts reach node 0 only and fail.
    nodes.kill(1).unwrap();
    nodes.kill(2).unwrap();
    for _ in 0..3 {
        assert_eq!(naive_attempt(&nodes, naive), None);
        let err = redlock.try_lock("transfer").await.unwrap_err();
        assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    }
    // Our counter on node 0 is ahead too, by an hour of tokens: what a node
    // whose clock ran fast (or partial fencing rounds) would leave there.
    let ahead = (now_ms() + 3_600_000) * 1024;
    nodes
        .command(
            0,
            &["SET", &fence_key(&redlock, "transfer"), &ahead.to_string()],
        )
        .unwrap();

    // A's quorum is {0, 1}.
    nodes.restart(1).unwrap();
    let naive_a = naive_attempt(&nodes, naive).unwrap();
    let a = redlock.lock("transfer").await.unwrap();
    let token_a = fence_of(&a).await;
    a.release().await.unwrap();

    // B's quorum is {1, 2}: it misses node 0.
    nodes.restart(2).unwrap();
    nodes.kill(0).unwrap();
    let naive_b = naive_attempt(&nodes, naive).unwrap();
    let b = redlock.lock("transfer").await.unwrap();
    let token_b = fence_of(&b).await;
    b.release().await.unwrap();

    assert!(
        naive_b <= naive_a,
        "the naive design should go backwards here: A {naive_a}, B {naive_b}"
    );
    assert!(
        token_a.get() > ahead,
        "A's token came from node 0: {token_a}"
    );
    assert!(token_b > token_a, "A {token_a}, then B {token_b}");
}

#[tokio::test]
async fn a_node_restarted_without_persistence_does_not_make_tokens_go_backwards() {
    let nodes = cluster(3); // no persistence: a restart loses everything
    let redlock = patient(&nodes, Duration::from_secs(5));
    let key = fence_key(&redlock, "shard-7");

    let a = redlock.lock("shard-7").await.unwrap();
    let token_a = fence_of(&a).await;
    a.release().await.unwrap();

    // One node lost its data; B's quorum is that node and one that kept it.
    nodes.restart(0).unwrap();
    nodes.kill(2).unwrap();
    assert_eq!(strings(&nodes, &key)[0], None, "node 0 forgot the counter");
    let b = redlock.lock("shard-7").await.unwrap();
    let token_b = fence_of(&b).await;
    b.release().await.unwrap();
    assert!(token_b > token_a, "A {token_a}, then B {token_b}");

    // Both nodes of C's quorum lost their data: only node time is left.
    nodes.restart(2).unwrap();
    nodes.restart(1).unwrap();
    nodes.kill(0).unwrap();
    assert_eq!(strings(&nodes, &key)[1..], [None, None]);
    let c = redlock.lock("shard-7").await.unwrap();
    let token_c = fence_of(&c).await;
    c.release().await.unwrap();
    assert!(token_c > token_b, "B {token_b}, then C {token_c}");
}

#[tokio::test]
async fn a_paused_holders_stale_write_is_refused_after_a_newer_holder_wrote() {
    let nodes = cluster(3);
    let store_node = cluster(1);
    let store = fred::clients::Client::new(
        Config::from_url(&store_node.url(0)).unwrap(),
        None,
        None,
        None,
    );
    store.init().await.unwrap();
    let writer = FencedWriter::new("fence:account:9");
    let redlock = patient(&nodes, Duration::from_millis(500));

    let a = redlock.lock("account:9").await.unwrap();
    let token_a = fence_of(&a).await;
    writer
        .set(&store, "account:9", "written by A", token_a)
        .await
        .unwrap();
    // A pauses (GC, swap, a stopped VM) past its lease; B takes over and writes.
    assert!(eventually(Duration::from_secs(5), || async { !a.is_valid() }).await);
    let b = redlock.lock("account:9").await.unwrap();
    let token_b = fence_of(&b).await;
    writer
        .set(&store, "account:9", "written by B", token_b)
        .await
        .unwrap();
    writer
        .set(&store, "account:9", "B again", token_b)
        .await
        .unwrap();

    // A wakes up and writes with its old token: refused, B's value stands.
    let err = writer
        .set(&store, "account:9", "late write by A", token_a)
        .await
        .unwrap_err();
    match err {
        FencedWriteError::Stale { token, highest, .. } => {
            assert_eq!((token, highest), (token_a, token_b));
        }
        other => panic!("expected a stale write, got {other}"),
    }
    let value: String = store.get("account:9").await.unwrap();
    assert_eq!(value, "B again");
    a.forget();
    b.release().await.unwrap();
}

#[tokio::test]
async fn fencing_can_be_turned_off_per_lock() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5))
        .with_options(&LockOptions {
            fencing: false,
            ..Default::default()
        })
        .unwrap();
    let lock = redlock.lock("unfenced").await.unwrap();
    assert!(matches!(
        lock.fence().await,
        Err(redquorum::Error::FencingOff { .. })
    ));
    assert_eq!(
        strings(&nodes, &fence_key(&redlock, "unfenced")),
        [None, None, None]
    );
    lock.release().await.unwrap();
}

#[tokio::test]
async fn no_token_is_issued_when_no_quorum_can_store_it() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let key = fence_key(&redlock, "broken");
    // Two of three nodes hold a counter the fencing operations refuse to use.
    for i in [0, 2] {
        nodes.command(i, &["SET", &key, "not-a-number"]).unwrap();
    }
    // The lock itself is granted (those nodes grant without proposing)...
    let lock = redlock.try_lock("broken").await.unwrap();
    // ...but no token: neither proposal round nor write-back reaches a quorum.
    let err = lock.fence().await.unwrap_err();
    assert!(matches!(err, Error::FenceUnavailable { .. }), "{err}");
    assert_eq!(err.outcomes().unwrap().failed(), 2, "{err}");
    assert!(lock.is_valid());
    // Confirmed by a quorum; the third node's release completes after it.
    assert!(lock.release().await.unwrap() >= 2);
    let key = redlock.key("broken");
    let gone = common::eventually(Duration::from_secs(5), || async {
        values(&nodes, &key).iter().all(Option::is_none)
    })
    .await;
    assert!(gone, "{:?}", values(&nodes, &key));
}

#[tokio::test]
async fn a_lock_whose_token_is_never_asked_for_costs_one_call_per_node_to_take() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    common::warm_up(&redlock).await;
    for i in 0..3 {
        nodes.command(i, &["CONFIG", "RESETSTAT"]).unwrap();
    }
    let lock = redlock.try_lock("never-asked").await.unwrap();
    common::assert_held_on(&nodes, &lock, 3).await;
    // One native `SET` per node, no script call (protocol/native.rs).
    let per_node: Vec<(u64, u64)> = (0..3)
        .map(|i| {
            (
                common::calls(&nodes, i, "set"),
                common::calls(&nodes, i, "evalsha"),
            )
        })
        .collect();
    assert_eq!(per_node, [(1, 0); 3]);
    // It wrote no fence counter (nor read one: no lock of this handle has
    // asked for a token yet, fence_on_demand.rs): only a write-back stores one.
    let proposed = strings(&nodes, &fence_key(&redlock, "never-asked"));
    assert!(proposed.iter().all(Option::is_none), "{proposed:?}");
    lock.release().await.unwrap();
}

#[tokio::test]
async fn a_try_lock_dropped_at_any_point_of_fencing_leaves_no_lock_behind() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(30));
    common::warm_up(&redlock).await;
    // Cut the attempt short after 0, 0.5, 1, ... ms: some drops land in the
    // acquire round, some in the fencing rounds, some after.
    for step in 0..12u64 {
        let cut = Duration::from_micros(500 * step);
        if let Ok(Ok(lock)) = tokio::time::timeout(cut, redlock.try_lock("cut")).await {
            lock.release().await.unwrap();
        }
        let key = redlock.key("cut");
        let gone = eventually(Duration::from_secs(5), || async {
            values(&nodes, &key).iter().all(Option::is_none)
        })
        .await;
        assert!(gone, "cut after {cut:?}: {:?}", values(&nodes, &key));
    }
}

fn now_ms() -> u64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    u64::try_from(since_epoch.as_millis()).unwrap()
}

#[tokio::test]
async fn fence_keys_expire_a_day_after_their_last_use() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let lock = redlock.try_lock("idle-later").await.unwrap();
    fence_of(&lock).await;
    lock.release().await.unwrap();
    let key = fence_key(&redlock, "idle-later");
    const DAY_MS: i64 = 86_400_000;
    // The write-back may still be landing on the last node when fence()
    // returns (or never reach it: its round ended at a quorum).
    let day_ahead = |left: i64| left > DAY_MS - 60_000 && left <= DAY_MS;
    let pttls = || {
        (0..3)
            .map(|i| common::pttl(&nodes, i, &key))
            .collect::<Vec<i64>>()
    };
    eventually(LANDS_WITHIN, || async {
        pttls().iter().all(|&left| day_ahead(left))
    })
    .await;
    let pttls = pttls();
    // -2: no fence key on that node.
    let expiring = pttls.iter().filter(|&&left| day_ahead(left)).count();
    assert!(expiring >= 2, "fence key pttl on each node: {pttls:?}");
    assert!(
        pttls.iter().all(|&left| day_ahead(left) || left == -2),
        "{pttls:?}"
    );
}
