//! Unit tests of the batcher (node/batch/batcher.rs), on a real node.

use super::*;
use crate::protocol::op::Code;
use fred::types::Value;

#[test]
fn each_operation_gets_its_own_answer() {
    let (a, mut ra) = oneshot::channel();
    let (b, mut rb) = oneshot::channel();
    let oom = FredError::new(ErrorKind::Unknown, "OOM");
    deliver(vec![a, b], vec![Ok(Value::Integer(1)), Err(oom)]);
    assert_eq!(ra.try_recv().unwrap().unwrap(), Value::Integer(1));
    assert!(rb.try_recv().unwrap().is_err());
}

/// A batch whose call fails at once (the connection task is gone) hands
/// its answers over after the queue's lock is released: delivering under
/// it, and asking for the next batch, deadlocked the queue and the
/// runtime. Runs on its own runtime and thread, so a deadlock shows as a
/// timeout instead of a hung test. Real node.
#[test]
fn a_batch_whose_call_fails_at_once_does_not_deadlock_the_queue() {
    use fred::interfaces::ClientLike;
    let cluster = Arc::new(redquorum_harness::Cluster::start(1).unwrap());
    let (done, finished) = std::sync::mpsc::channel();
    let nodes = Arc::clone(&cluster);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let answers = runtime.block_on(async {
            let (config, id) = crate::node::connection::parse_url(&nodes.url(0)).unwrap();
            let client = crate::node::connection::client(config, Duration::from_secs(10));
            let link = Arc::new(Link::new(id, client.clone(), Duration::from_secs(10)));
            let connection = client.connect();
            client.wait_for_connect().await.unwrap();
            let batcher = Arc::new(Batcher::new(
                client,
                Duration::from_secs(10),
                link,
                &crate::node::script::OPS,
            ));
            nodes.pause(0).unwrap();
            // Entering sends or queues: two operations take the node's
            // slots (sent to the paused node), the release queues.
            let all = futures::future::join3(
                batcher.enter(Op::for_test(Code::Acquire)).answer(),
                batcher.enter(Op::for_test(Code::Extend)).answer(),
                batcher.enter(Op::for_test(Code::Release)).answer(),
            );
            let mut all = std::pin::pin!(all);
            assert!(futures::poll!(all.as_mut()).is_pending());
            // The connection task stops: the calls in flight fail, and
            // the queued release's call then fails at once.
            connection.abort();
            let (a, b, c) = all.await;
            vec![a, b, c]
        });
        drop(runtime);
        let _ = done.send(answers);
    });
    let answers = finished
        .recv_timeout(Duration::from_secs(30))
        .expect("no answer in 30 s: the batch queue deadlocked");
    assert!(answers.iter().all(Result::is_err), "{answers:?}");
    cluster.resume(0).unwrap();
}

/// A batcher on node 0 of `nodes`, the lock script loaded there.
pub(super) async fn batcher_on(nodes: &redquorum_harness::Cluster) -> Arc<Batcher> {
    use fred::interfaces::ClientLike;
    let (config, id) = crate::node::connection::parse_url(&nodes.url(0)).unwrap();
    let client = crate::node::connection::client(config, Duration::from_secs(10));
    let link = Arc::new(Link::new(id, client.clone(), Duration::from_secs(10)));
    client.connect();
    client.wait_for_connect().await.unwrap();
    crate::node::script::OPS.script.load(&client).await.unwrap();
    Arc::new(Batcher::new(
        client,
        Duration::from_secs(10),
        link,
        &crate::node::script::OPS,
    ))
}

/// A plain (string record) claim on `resource`, with a 60 s TTL.
pub(super) fn plain_claim(resource: &str) -> crate::protocol::claim::Claim {
    use crate::protocol::claim::{Claim, Kind};
    use crate::protocol::keys::ResourceKeys;
    use crate::protocol::token::OwnerToken;
    Claim::new(
        Kind::Lock,
        resource,
        ResourceKeys::new("noscript-test:", resource),
        OwnerToken::random(),
        Duration::from_secs(60),
    )
}

/// The number of a call about to be made on `batcher`'s connection:
/// `overtaken`, one more was sent after it; else it is the last one sent.
pub(super) fn numbered(batcher: &Batcher, overtaken: bool) -> u64 {
    let mut state = batcher.lock();
    let seq = state.number(&[]);
    if overtaken {
        state.number(&[]);
    }
    seq
}

/// Whether `key` is on node 0.
pub(super) fn exists(nodes: &redquorum_harness::Cluster, key: &fred::types::Key) -> bool {
    let key = key.as_str().unwrap().to_owned();
    nodes.command(0, &["EXISTS", &key]).unwrap().as_int() == Some(1)
}
