//! The resends of `again` (node/batch/batcher_call.rs) after a NOSCRIPT
//! answer or a form alone that left the decision to the script, each
//! interleaving made to happen on a real node.

use super::tests::{batcher_on, exists, numbered, plain_claim};
use super::*;

/// The NOSCRIPT interleavings of `again`, each made to happen
/// deterministically: the node's scripts are flushed before the call, and
/// the call counts as overtaken (something was sent on the connection after
/// it) by numbering it before the last one sent. Real node.
///
/// An overtaken call's acquire is never sent again: its attempt's unwind
/// may already have run on the node, and a late copy would then set the
/// key for a whole TTL with nobody to remove it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overtaken_call_that_found_no_script_never_sends_its_acquire_again() {
    let nodes = redquorum_harness::Cluster::start(1).unwrap();
    let batcher = batcher_on(&nodes).await;
    let claim = plain_claim("overtaken-acquire");
    nodes.command(0, &["SCRIPT", "FLUSH"]).unwrap();
    let seq = numbered(&batcher, true);
    // Proposing a token: the script's (an acquire alone that proposes none
    // is a native SET: see the tests below).
    let replies = Arc::clone(&batcher)
        .call(seq, vec![claim.acquire(true)])
        .await;
    let error = replies[0]
        .as_ref()
        .expect_err("an overtaken acquire was answered");
    assert!(crate::node::script::is_noscript(error), "{error:?}");
    assert!(
        !exists(&nodes, &claim.keys.lock),
        "the overtaken acquire was sent again and set its key"
    );
}

/// The operations of an overtaken call that are sent again (all but its
/// acquires) get their own answers: an acquire before them must not take
/// a release's `1` as a grant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_sent_again_after_noscript_get_their_own_answers() {
    let nodes = redquorum_harness::Cluster::start(1).unwrap();
    let batcher = batcher_on(&nodes).await;
    let (wanted, ours) = (plain_claim("wanted"), plain_claim("ours"));
    let taken = Arc::clone(&batcher)
        .call(1, vec![ours.acquire(false)])
        .await;
    assert_eq!(crate::protocol::op::integer(taken[0].clone()).unwrap(), 1);
    nodes.command(0, &["SCRIPT", "FLUSH"]).unwrap();
    let seq = numbered(&batcher, true);
    let replies = Arc::clone(&batcher)
        .call(seq, vec![wanted.acquire(false), ours.release()])
        .await;
    match &replies[0] {
        Err(error) => assert!(crate::node::script::is_noscript(error), "{error:?}"),
        Ok(answer) => panic!("the acquire sent once, overtaken, was answered {answer:?}"),
    }
    assert_eq!(
        crate::protocol::op::integer(replies[1].clone()).unwrap(),
        1,
        "the release sent again did not get its own answer"
    );
    assert!(!exists(&nodes, &ours.keys.lock), "the release did not run");
    assert!(!exists(&nodes, &wanted.keys.lock), "the acquire ran");
}

/// A call nothing overtook goes again whole, each operation answered in
/// its own slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_nothing_overtook_goes_again_whole_after_noscript() {
    let nodes = redquorum_harness::Cluster::start(1).unwrap();
    let batcher = batcher_on(&nodes).await;
    let (other, ours) = (plain_claim("contended"), plain_claim("mine"));
    let contender = plain_claim("contended");
    let taken = Arc::clone(&batcher)
        .call(1, vec![other.acquire(false), ours.acquire(false)])
        .await;
    assert!(taken.iter().all(|t| t.is_ok()), "{taken:?}");
    nodes.command(0, &["SCRIPT", "FLUSH"]).unwrap();
    let seq = numbered(&batcher, false);
    let replies = Arc::clone(&batcher)
        .call(seq, vec![contender.acquire(false), ours.release()])
        .await;
    let answers: Vec<i64> = replies
        .into_iter()
        .map(|r| crate::protocol::op::integer(r).unwrap())
        .collect();
    assert_eq!(answers, [0, 1], "contended acquire refused, release done");
    assert!(!exists(&nodes, &ours.keys.lock));
}

/// Whether `claim`'s hold is in the lock record at its key on node 0.
fn holds(nodes: &redquorum_harness::Cluster, claim: &crate::protocol::claim::Claim) -> bool {
    let key = claim.keys.lock.as_str().unwrap().to_owned();
    let field = format!("h:{}", claim.token);
    nodes
        .command(0, &["HEXISTS", &key, &field])
        .unwrap()
        .as_int()
        == Some(1)
}

/// A lock record left with only expired holds at `claim`'s key on node 0
/// (a reader's, expired a second ago; the key lives a minute more): the
/// native `SET` refuses it (WRONGTYPE) and only the script's full acquire
/// finds it free.
fn expired_record(nodes: &redquorum_harness::Cluster, claim: &crate::protocol::claim::Claim) {
    let key = claim.keys.lock.as_str().unwrap().to_owned();
    let Ok(redquorum_harness::Reply::Array(Some(time))) = nodes.command(0, &["TIME"]) else {
        panic!("TIME did not answer an array");
    };
    let now_s: i64 = time[0].as_text().unwrap().parse().unwrap();
    let expired = (now_s * 1000 - 1000).to_string();
    nodes
        .command(0, &["HSET", &key, "kind", "read", "h:gone", &expired])
        .unwrap();
    nodes.command(0, &["PEXPIRE", &key, "60000"]).unwrap();
}

/// The default acquire is one native `SET` (protocol/native.rs); when it
/// meets a lock record and nothing was sent after it on the connection, it
/// goes again as the script, whose full acquire judges the record: here
/// granted, its holds having all expired. Real node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_acquire_that_met_a_lock_record_goes_again_as_the_script() {
    let nodes = redquorum_harness::Cluster::start(1).unwrap();
    let batcher = batcher_on(&nodes).await;
    let claim = plain_claim("record-left");
    expired_record(&nodes, &claim);
    let seq = numbered(&batcher, false);
    let replies = Arc::clone(&batcher)
        .call(seq, vec![claim.acquire(false)])
        .await;
    assert_eq!(crate::protocol::op::integer(replies[0].clone()).unwrap(), 1);
    assert!(
        holds(&nodes, &claim),
        "the full acquire did not take the record"
    );
}

/// A native acquire that met a lock record after something else went out
/// on the connection (an unwind of its attempt, maybe) is never sent again:
/// it answers taken and the record is as it was. Real node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overtaken_native_acquire_is_never_sent_again() {
    let nodes = redquorum_harness::Cluster::start(1).unwrap();
    let batcher = batcher_on(&nodes).await;
    let claim = plain_claim("record-overtaken");
    expired_record(&nodes, &claim);
    let seq = numbered(&batcher, true);
    let replies = Arc::clone(&batcher)
        .call(seq, vec![claim.acquire(false)])
        .await;
    assert_eq!(crate::protocol::op::integer(replies[0].clone()).unwrap(), 0);
    assert!(
        !holds(&nodes, &claim),
        "the overtaken acquire was sent again"
    );
}

/// A plain release alone runs its own small script; when that finds a lock
/// record (a hash: our string made one by an older client's write-back) it
/// leaves the release to the lock script, which removes our hold there.
/// Real node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_release_alone_leaves_a_lock_record_to_the_lock_script() {
    let nodes = redquorum_harness::Cluster::start(1).unwrap();
    let batcher = batcher_on(&nodes).await;
    let claim = plain_claim("promoted");
    record_of(&nodes, &claim);
    let seq = numbered(&batcher, false);
    let replies = Arc::clone(&batcher).call(seq, vec![claim.release()]).await;
    assert_eq!(crate::protocol::op::integer(replies[0].clone()).unwrap(), 1);
    assert!(!exists(&nodes, &claim.keys.lock), "the hold is still there");
}

/// After a script flush, a plain release alone goes again as its own
/// script's body, which caches that script again for the next releases.
/// Real node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_release_alone_after_a_flush_caches_its_script_again() {
    let nodes = redquorum_harness::Cluster::start(1).unwrap();
    let batcher = batcher_on(&nodes).await;
    let claim = plain_claim("flushed-release");
    let taken = Arc::clone(&batcher)
        .call(1, vec![claim.acquire(false)])
        .await;
    assert_eq!(crate::protocol::op::integer(taken[0].clone()).unwrap(), 1);
    nodes.command(0, &["SCRIPT", "FLUSH"]).unwrap();
    let seq = numbered(&batcher, true);
    let replies = Arc::clone(&batcher).call(seq, vec![claim.release()]).await;
    assert_eq!(crate::protocol::op::integer(replies[0].clone()).unwrap(), 1);
    assert!(!exists(&nodes, &claim.keys.lock), "the release did not run");
    let sha = (crate::node::script::OPS.plain_release.as_ref())
        .expect("the single form has it")
        .sha1()
        .to_string();
    let cached = nodes.command(0, &["SCRIPT", "EXISTS", &sha]).unwrap();
    assert!(
        matches!(&cached, redquorum_harness::Reply::Array(Some(v)) if v[0].as_int() == Some(1)),
        "{cached:?}"
    );
}

/// A lock record holding `claim` at its key on node 0 (its string made a
/// hash, as an older client's write-back did), living a minute.
fn record_of(nodes: &redquorum_harness::Cluster, claim: &crate::protocol::claim::Claim) {
    let key = claim.keys.lock.as_str().unwrap().to_owned();
    let field = format!("h:{}", claim.token);
    nodes
        .command(0, &["HSET", &key, "kind", "lock", &field, "99999999999999"])
        .unwrap();
    nodes.command(0, &["PEXPIRE", &key, "60000"]).unwrap();
}

/// After a flush, a plain release alone that meets a lock record finds
/// neither its own script nor the lock script cached: it must still run
/// (the lock script's body goes), not end at the second NOSCRIPT and leave
/// the hold for its TTL. It may, overtaken or not: a release creates no
/// hold. Real node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_release_that_meets_a_lock_record_after_a_flush_still_runs() {
    let nodes = redquorum_harness::Cluster::start(1).unwrap();
    let batcher = batcher_on(&nodes).await;
    for overtaken in [false, true] {
        let claim = plain_claim(&format!("flushed-record-{overtaken}"));
        record_of(&nodes, &claim);
        nodes.command(0, &["SCRIPT", "FLUSH"]).unwrap();
        let seq = numbered(&batcher, overtaken);
        let replies = Arc::clone(&batcher).call(seq, vec![claim.release()]).await;
        assert_eq!(
            crate::protocol::op::integer(replies[0].clone()).ok(),
            Some(1),
            "overtaken {overtaken}: {replies:?}"
        );
        assert!(!holds(&nodes, &claim), "overtaken {overtaken}: still held");
    }
}

/// After a flush, a native acquire that meets a lock record goes again as
/// the script by its digest, which is not cached either: nothing was sent
/// after it, so it goes again with the script's body and is judged by the
/// full acquire (granted: the record's holds expired). Overtaken, it is
/// never sent again. Real node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_acquire_that_meets_a_lock_record_after_a_flush_goes_with_the_body() {
    let nodes = redquorum_harness::Cluster::start(1).unwrap();
    let batcher = batcher_on(&nodes).await;
    for overtaken in [false, true] {
        let claim = plain_claim(&format!("flushed-left-{overtaken}"));
        expired_record(&nodes, &claim);
        nodes.command(0, &["SCRIPT", "FLUSH"]).unwrap();
        let seq = numbered(&batcher, overtaken);
        let replies = Arc::clone(&batcher)
            .call(seq, vec![claim.acquire(false)])
            .await;
        let granted = crate::protocol::op::integer(replies[0].clone()).ok() == Some(1);
        assert_eq!(granted, !overtaken, "overtaken {overtaken}: {replies:?}");
        assert_eq!(holds(&nodes, &claim), !overtaken, "overtaken {overtaken}");
    }
}

/// A waiting writer's next attempt takes a hold with the same token while
/// the last attempt's unwind still waits for its NOSCRIPT answer: sent again
/// then, the unwind would land after that acquire and remove the hold its
/// holder believes it has (a torture's `hold-removed`). It is not sent again.
/// Real node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwind_overtaken_by_the_next_attempt_of_its_token_is_not_sent_again() {
    let nodes = redquorum_harness::Cluster::start(1).unwrap();
    let batcher = batcher_on(&nodes).await;
    let claim = plain_claim("next-attempt");
    // The first attempt's hold (proposing a token: the script's record).
    let taken = Arc::clone(&batcher)
        .call(1, vec![claim.acquire(true)])
        .await;
    assert!(crate::protocol::op::integer(taken[0].clone()).unwrap() >= 1024);
    nodes.command(0, &["SCRIPT", "FLUSH"]).unwrap();
    // Its unwind goes out; before its NOSCRIPT answer is read, the next
    // attempt's acquire (the same token) goes out and takes the hold again.
    let unwind_seq = numbered(&batcher, false);
    let next = claim.acquire(true);
    let next_seq = batcher.lock().number([&next]);
    let again = Arc::clone(&batcher).call(next_seq, vec![next]).await;
    assert!(
        crate::protocol::op::integer(again[0].clone()).unwrap() >= 1024,
        "{again:?}"
    );
    let replies = Arc::clone(&batcher)
        .call(unwind_seq, vec![claim.unwind()])
        .await;
    assert!(replies[0].is_err(), "the unwind ran: {replies:?}");
    // Nobody else locks this name: the key is the next attempt's hold.
    assert!(
        exists(&nodes, &claim.keys.lock),
        "the unwind was sent again after the next attempt and removed its hold"
    );
}
