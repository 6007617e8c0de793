//! A node that lost its script cache (SCRIPT FLUSH, or a restart before the
//! reload) answers NOSCRIPT. An acquire must never be re-sent after its
//! attempt was decided: the unwind is ordered after the acquire on the
//! connection, but a fallback EVAL sent later lands after the unwind and
//! sets the key for a full TTL. Real nodes.

mod common;

use std::time::Duration;

use common::{calls, cluster, eventually};
use redquorum::{Error, LockOptions, Redlock};

/// Node 2 is paused (SIGSTOP) during each attempt: the acquire and the
/// unwind both wait in its socket, and on resume both NOSCRIPT answers come
/// back in one read, so whatever each call does next races the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_attempt_leaves_no_key_on_a_slow_node_whose_scripts_were_flushed() {
    let nodes = cluster(3);
    let holder = common::redlock(&nodes, Duration::from_secs(60));
    // Proposing a token in every acquire, so each is a call of the script
    // (a plain acquire alone on a connection is a native SET, which has no
    // script to miss: protocol/native.rs).
    let ours = Redlock::builder()
        .nodes(nodes.urls())
        .ttl(Duration::from_secs(60))
        .node_timeout(Duration::from_secs(5))
        .build()
        .unwrap()
        .with_options(&LockOptions {
            ttl: Duration::from_secs(60),
            eager_fence: true,
            ..LockOptions::default()
        })
        .unwrap();
    common::warm_up(&ours).await;
    let rounds = 8;
    let mut held = Vec::new();
    for round in 0..rounds {
        let resource = format!("flushed-{round}");
        // Another owner holds nodes 0 and 1; node 2 is free. Its acquire
        // may land on node 2 after the decision: wait for it before the
        // DEL, or the late acquire leaves the holder's key there.
        let lock = holder.try_lock(&resource).await.unwrap();
        let landed = eventually(Duration::from_secs(5), || async {
            nodes.command(2, &["EXISTS", lock.key()]).unwrap().as_int() == Some(1)
        })
        .await;
        assert!(landed, "the holder's acquire never reached node 2");
        nodes.command(2, &["DEL", lock.key()]).unwrap();
        held.push(lock);
        nodes.command(2, &["SCRIPT", "FLUSH"]).unwrap();
        nodes.pause(2).unwrap();
        let scripts = || calls(&nodes, 0, "evalsha") + calls(&nodes, 1, "evalsha");
        let before = scripts();
        let attempt = tokio::spawn({
            let ours = ours.clone();
            async move { ours.try_lock(&resource).await }
        });
        // The attempt is decided by nodes 0 and 1 and its unwind sent to the
        // paused node 2, where it waits (the attempt waits for it).
        let sent = eventually(Duration::from_secs(5), || async { scripts() >= before + 2 }).await;
        assert!(sent, "the attempt never reached nodes 0 and 1");
        tokio::time::sleep(Duration::from_millis(50)).await;
        nodes.resume(2).unwrap();
        let attempt = attempt.await.unwrap();
        assert!(
            matches!(attempt, Err(Error::Contended { .. })),
            "{attempt:?}"
        );
    }
    // Let every late answer and fallback land on node 2 (two per round at
    // most: the acquire's and the unwind's); then nothing of ours may be there.
    eventually(Duration::from_secs(3), || async {
        calls(&nodes, 2, "eval") >= 2 * rounds as u64
    })
    .await;
    for lock in &held {
        let left = nodes.command(2, &["EXISTS", lock.key()]).unwrap().as_int();
        assert_eq!(
            left,
            Some(0),
            "{} left on the flushed node",
            lock.resource()
        );
    }
}
