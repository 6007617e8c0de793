//! The plain lock's string record (`protocol/scripts/ops/`): a plain hold
//! is one `SET NX PX` string, every other kind a hash, and each kind's
//! operations read both, so that one name is still one lock. Also what an
//! older client (hash records only) and this one do on one name, and the
//! fence counter a plain acquire no longer creates, and the native `SET`
//! that is the default acquire on a single server. Real nodes.

mod common;

use std::time::Duration;

use common::{Record, cluster, record, redlock, strings};
use redquorum::{Error, Redlock};
use redquorum_harness::{Cluster, Reply};

/// The lock script of the release before string records (hash records
/// only), as an older client sharing the nodes runs it.
const HASH_ONLY_OPS: &str = include_str!("fixtures/ops_hash_only.lua");

/// One operation of the older client's script on node `index`: `code` on
/// `keys` with `args`, in that script's encoding; its one answer.
fn old_client(cluster: &Cluster, index: usize, code: &str, keys: &[&str], args: &[&str]) -> Reply {
    let (key_count, arg_count) = (keys.len().to_string(), args.len().to_string());
    let mut command = vec!["EVAL", HASH_ONLY_OPS, &key_count];
    command.extend_from_slice(keys);
    command.extend_from_slice(&[code, &key_count, &arg_count]);
    command.extend_from_slice(args);
    match cluster.command(index, &command) {
        Ok(Reply::Array(Some(mut answers))) if answers.len() == 1 => answers.remove(0),
        other => panic!("the older script answered {other:?}"),
    }
}

/// The older client's plain acquire (fenced) on every node: how many granted.
fn old_client_acquires(cluster: &Cluster, key: &str, fence: &str, token: &str) -> usize {
    let args = [token, "10000", "", "p", "", "0", "1", "lock"];
    (0..cluster.len())
        .filter(|&i| {
            let answer = old_client(cluster, i, "a", &[key, fence], &args);
            matches!(answer, Reply::Integer(n) if n >= 1)
        })
        .count()
}

fn fence_key(redlock: &Redlock, resource: &str) -> String {
    redlock.fence_key(resource)
}

#[tokio::test]
async fn a_plain_lock_is_one_string_with_its_token_expiring_with_its_lease() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let lock = redlock.try_lock("string-record").await.unwrap();
    let owner = lock.owner().to_string();
    common::settles("a string record on every node", true, || {
        (0..3).all(|i| {
            matches!(record(&nodes, i, lock.key()),
                Record::Plain { ref token, left_ms } if *token == owner && left_ms > 9_000)
        })
    })
    .await;
    lock.release().await.unwrap();
    common::settles("no record after the release", vec![None; 3], || {
        common::values(&nodes, "lock:{string-record}")
    })
    .await;
}

/// Every kind on a name a plain hold has (a string) is refused, and the
/// plain lock on a name each of them holds (a hash) is refused too.
#[tokio::test]
async fn a_plain_hold_and_every_other_kind_exclude_each_other_across_the_two_records() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let plain = redlock.try_lock("mixed").await.unwrap();
    let contended = |what: &str, result: Result<(), Error>| {
        assert!(
            matches!(result, Err(Error::Contended { .. })),
            "{what} beside a plain hold: {result:?}"
        );
    };
    contended("read", redlock.try_read_lock("mixed").await.map(drop));
    contended("write", redlock.try_write_lock("mixed").await.map(drop));
    let owner = redlock.reentrant_owner();
    contended("reentrant", owner.try_lock("mixed").await.map(drop));
    let semaphore = redlock.semaphore("mixed", 2).unwrap();
    contended("permit", semaphore.try_acquire().await.map(drop));
    let election = redlock.election("mixed").unwrap();
    contended("leader", election.try_campaign("x").await.map(drop));
    contended(
        "all-of",
        redlock.try_lock_all(&["mixed", "other"]).await.map(drop),
    );
    contended("plain", redlock.try_lock("mixed").await.map(drop));
    plain.release().await.unwrap();

    let reader = redlock.try_read_lock("mixed").await.unwrap();
    contended("plain over read", redlock.try_lock("mixed").await.map(drop));
    reader.release().await.unwrap();
    let writer = redlock.try_write_lock("mixed").await.unwrap();
    contended(
        "plain over write",
        redlock.try_lock("mixed").await.map(drop),
    );
    writer.release().await.unwrap();
    // Freed whichever record was there: the plain lock takes it again.
    redlock
        .try_lock("mixed")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

/// A lock record left with only expired holds (the key outlives them: it
/// expires with its longest hold) is free: the plain acquire, finding a
/// hash where it sets its string, leaves it to the full acquire.
#[tokio::test]
async fn a_plain_lock_takes_a_name_whose_lock_record_holds_only_expired_holds() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    for i in 0..3 {
        let now = common::node_ms(&nodes, i).unwrap();
        let expired = (now - 1_000).to_string();
        let key = "lock:{stale}";
        nodes
            .command(i, &["HSET", key, "kind", "read", "h:gone", &expired])
            .unwrap();
        nodes.command(i, &["PEXPIRE", key, "60000"]).unwrap();
    }
    let lock = redlock
        .try_lock("stale")
        .await
        .expect("free: its only hold expired");
    common::assert_held_on(&nodes, &lock, 3).await;
    lock.release().await.unwrap();
}

/// An older client (hash records only) and this one on one name: never both
/// granted. The older one fails on the string (WRONGTYPE) where this one
/// holds; this one is contended where the older one holds a hash.
#[tokio::test]
async fn an_older_client_and_this_one_are_never_both_granted_one_name() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let fence = fence_key(&redlock, "shared");
    let lock = redlock.try_lock("shared").await.unwrap();
    common::assert_held_on(&nodes, &lock, 3).await;
    let granted = old_client_acquires(&nodes, "lock:{shared}", &fence, "older");
    assert_eq!(
        granted, 0,
        "the older client was granted beside a plain hold"
    );
    for i in 0..3 {
        let answer = old_client(&nodes, i, "r", &["lock:{shared}"], &["older", "1"]);
        assert!(
            !matches!(answer, Reply::Integer(1)),
            "older release: {answer:?}"
        );
    }
    common::assert_held_on(&nodes, &lock, 3).await;
    lock.release().await.unwrap();
    common::settles("released", vec![None; 3], || {
        common::values(&nodes, "lock:{shared}")
    })
    .await;

    assert_eq!(
        old_client_acquires(&nodes, "lock:{shared}", &fence, "older"),
        3
    );
    let refused = redlock.try_lock("shared").await;
    assert!(
        matches!(refused, Err(Error::Contended { .. })),
        "granted beside the older client's hold: {refused:?}"
    );
    for i in 0..3 {
        let answer = old_client(&nodes, i, "r", &["lock:{shared}"], &["older", "1"]);
        assert!(
            matches!(answer, Reply::Integer(1)),
            "older release: {answer:?}"
        );
    }
    redlock
        .try_lock("shared")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

/// An acquire writes no fence counter (a fresh handle's reads none
/// either): a name never fenced has no counter after it, and its first
/// `fence()` (two rounds: the proposal, which writes nothing, and the
/// write-back) creates the counters at the token on a quorum. The record
/// stays the hold's string (an inspection shows the counter, not the
/// hold's token), and is released as before.
#[tokio::test]
async fn a_plain_acquire_creates_no_fence_counter_and_the_write_back_stores_the_token() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(30));
    common::warm_up(&redlock).await;
    // Its release returned at a quorum: the last node's must land before counting.
    common::settles("warm-up released", vec![None; 3], || {
        common::values(&nodes, "lock:{warm-up}")
    })
    .await;
    let fence = fence_key(&redlock, "counted");
    let first = redlock.try_lock("counted").await.unwrap();
    common::assert_held_on(&nodes, &first, 3).await;
    assert_eq!(
        strings(&nodes, &fence),
        vec![None; 3],
        "the acquire created a counter"
    );
    let before: Vec<u64> = (0..3)
        .map(|i| common::calls(&nodes, i, "evalsha"))
        .collect();
    let token = first.fence().await.unwrap();
    // The last node's write-back may land after the quorum confirmed, or
    // not at all (dropped while queued behind its proposal).
    let calls = || (0..3).map(|i| common::calls(&nodes, i, "evalsha") - before[i]);
    common::eventually(common::LANDS_WITHIN, || async { calls().all(|n| n == 2) }).await;
    let calls: Vec<u64> = calls().collect();
    assert!(calls.iter().all(|&n| n <= 2), "fence() per node: {calls:?}");
    assert!(calls.iter().filter(|&&n| n == 2).count() >= 2, "{calls:?}");
    let stored: Vec<Option<String>> = strings(&nodes, &fence);
    let at_token = stored.iter().flatten().filter(|v| **v == token.to_string());
    assert!(at_token.count() >= 2, "{stored:?} vs {token}");
    let inspection = redlock.inspect("counted").await.unwrap();
    let counted = inspection
        .nodes()
        .filter_map(|(_, view)| view.ok())
        .filter(|view| view.fence() == Some(token.get()) && view.holds().len() == 1)
        .count();
    assert!(
        counted >= 2,
        "the counter at the token on {counted} nodes: {inspection:?}"
    );
    first.release().await.unwrap();
    common::settles("released", vec![None; 3], || {
        common::values(&nodes, "lock:{counted}")
    })
    .await;

    let second = redlock.try_lock("counted").await.unwrap();
    assert!(second.fence().await.unwrap() > token);
    second.release().await.unwrap();
}

/// The default lock's acquire on a single server is the native `SET key
/// token NX PX ttl GET` (`protocol/native.rs`), no call of the lock script;
/// its release is the script's. A lock record at the name (a hash) is the
/// script's to judge: see the test on expired holds above.
#[tokio::test]
async fn the_default_acquire_is_one_native_set_per_node_and_no_script() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    common::warm_up(&redlock).await;
    common::settles("warm-up released", vec![None; 3], || {
        common::values(&nodes, "lock:{warm-up}")
    })
    .await;
    let count =
        |name: &str| -> Vec<u64> { (0..3).map(|i| common::calls(&nodes, i, name)).collect() };
    let (scripts, sets) = (count("evalsha"), count("set"));
    let lock = redlock.try_lock("native").await.unwrap();
    common::assert_held_on(&nodes, &lock, 3).await;
    assert_eq!(count("evalsha"), scripts, "the acquire called the script");
    let set: Vec<u64> = count("set")
        .iter()
        .zip(&sets)
        .map(|(after, before)| after - before)
        .collect();
    assert_eq!(set, vec![1; 3], "SETs per node");
    lock.release().await.unwrap();
    common::settles("released", vec![None; 3], || {
        common::values(&nodes, "lock:{native}")
    })
    .await;
    let released: Vec<u64> = count("evalsha")
        .iter()
        .zip(&scripts)
        .map(|(after, before)| after - before)
        .collect();
    assert_eq!(
        released,
        vec![1; 3],
        "script calls per node for the release"
    );
}

/// A plain hold whose token was written back keeps its string record on
/// every node (the write-back raises the counter, and writes nothing in
/// the record), so its extend and release stay the plain ones: the release
/// is the plain release's own script, one call per node.
#[tokio::test]
async fn a_plain_hold_with_a_token_keeps_its_string_record_and_plain_release() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(30));
    let mut lock = redlock.try_lock("fenced-release").await.unwrap();
    lock.fence().await.unwrap();
    let count = || -> Vec<u64> {
        (0..3)
            .map(|i| common::calls(&nodes, i, "evalsha"))
            .collect()
    };
    // The write-back lands on every node (it may be dropped on the last
    // one while queued; then that node is not judged).
    let fence = fence_key(&redlock, "fenced-release");
    let raised = || (0..3).filter(|&i| strings(&nodes, &fence)[i].is_some());
    common::eventually(common::LANDS_WITHIN, || async { raised().count() == 3 }).await;
    let written: Vec<usize> = raised().collect();
    assert!(written.len() >= 2, "the write-back reached {written:?}");
    for &i in &written {
        assert!(
            matches!(record(&nodes, i, lock.key()), Record::Plain { .. }),
            "node {i}'s record after the write-back"
        );
    }
    lock.extend().await.unwrap();
    let before = count();
    let key = lock.key().to_owned();
    lock.release().await.unwrap();
    common::settles("released", vec![None; 3], || common::values(&nodes, &key)).await;
    let calls: Vec<u64> = count()
        .iter()
        .zip(&before)
        .map(|(after, was)| after - was)
        .collect();
    for i in written {
        assert_eq!(
            calls[i], 1,
            "script calls on node {i} for the release: {calls:?}"
        );
    }
}

/// The write-back on a string record is owner-checked: where the plain
/// hold is gone it raises no counter, and without a quorum of them the
/// holder gets no token; its lease is lost. Real nodes, the hold deleted
/// on two of three.
#[tokio::test]
async fn a_write_back_where_the_plain_hold_is_gone_raises_no_counter_and_gives_no_token() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(30))
        .with_options(&redquorum::LockOptions {
            ttl: Duration::from_secs(30),
            eager_fence: true,
            ..Default::default()
        })
        .unwrap();
    let lock = redlock.try_lock("gone").await.unwrap();
    common::assert_held_on(&nodes, &lock, 3).await;
    for i in [0, 1] {
        nodes.command(i, &["DEL", lock.key()]).unwrap();
    }
    let err = lock.fence().await.unwrap_err();
    assert!(matches!(err, Error::Lost { .. }), "{err}");
    let fence = fence_key(&redlock, "gone");
    assert_eq!(&strings(&nodes, &fence)[..2], [None, None]);
    assert!(
        matches!(record(&nodes, 2, lock.key()), Record::Plain { .. }),
        "node 2's record"
    );
}
