//! Read-write locks on real nodes: readers overlap, a writer excludes
//! everyone, a crashed reader's hold expires, a writer is not starved by a
//! reader stream, and node failures.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{LANDS_WITHIN, cluster, eventually, redlock};
use redquorum::{Error, LockOptions};
use redquorum_harness::Cluster;

/// The number of live holds (readers) in the lock at `key` on each node.
fn readers(nodes: &Cluster, key: &str) -> Vec<usize> {
    common::hold_counts(nodes, key)
}

/// Whether a waiting writer's intent is recorded in the lock at `key`, per node.
fn intent(nodes: &Cluster, key: &str) -> Vec<bool> {
    (0..nodes.len())
        .map(|i| {
            nodes
                .command(i, &["HEXISTS", key, "intent"])
                .ok()
                .and_then(|r| r.as_int())
                == Some(1)
        })
        .collect()
}

/// Whether a writer holds the lock at `key`, per node.
fn writer(nodes: &Cluster, key: &str) -> Vec<bool> {
    common::kinds(nodes, key)
        .into_iter()
        .map(|kind| kind.as_deref() == Some("write"))
        .collect()
}

#[tokio::test]
async fn concurrent_readers_overlap() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let (a, b, c) = tokio::join!(
        redlock.read_lock("catalog"),
        redlock.read_lock("catalog"),
        redlock.read_lock("catalog")
    );
    let (a, b, c) = (a.unwrap(), b.unwrap(), c.unwrap());
    assert!(a.is_valid() && b.is_valid() && c.is_valid());
    // A grant returns at quorum, and an acquire still queued for the last
    // node when the quorum was decided is dropped unsent (nothing to undo):
    // each reader holds on at least a quorum, never more than 3 share a node.
    let key = redlock.key("catalog");
    for read in [&a, &b, &c] {
        let on = common::held_on(&nodes, &key, &read.owner().to_string());
        assert!(
            on >= 2,
            "a reader holds on {on} nodes: {:?}",
            readers(&nodes, &key)
        );
    }
    assert!(readers(&nodes, &key).iter().all(|&n| n <= 3));
    for read in [a, b, c] {
        assert!(read.release().await.unwrap() >= 2);
    }
    // A release returns at quorum: the last node's may still be landing.
    common::settles("readers left", vec![0, 0, 0], || readers(&nodes, &key)).await;
}

#[tokio::test]
async fn a_writer_excludes_readers_and_writers() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let write = redlock.try_write_lock("prices").await.unwrap();
    assert!(matches!(
        redlock.try_read_lock("prices").await,
        Err(Error::Contended { .. })
    ));
    assert!(matches!(
        redlock.try_write_lock("prices").await,
        Err(Error::Contended { .. })
    ));
    assert!(write.release().await.unwrap() >= 2);
    redlock
        .try_read_lock("prices")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn readers_exclude_a_writer_and_a_failed_try_leaves_no_intent() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let key = redlock.key("menu");
    let read = redlock.try_read_lock("menu").await.unwrap();
    assert!(matches!(
        redlock.try_write_lock("menu").await,
        Err(Error::Contended { .. })
    ));
    assert_eq!(intent(&nodes, &key), [false; 3]);
    assert_eq!(writer(&nodes, &key), [false; 3]);
    // So readers are still welcome.
    let second = redlock.try_read_lock("menu").await.unwrap();
    read.release().await.unwrap();
    second.release().await.unwrap();
    redlock
        .try_write_lock("menu")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_crashed_readers_hold_expires_while_other_readers_stay() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(600));
    let key = redlock.key("feed");
    redlock.try_read_lock("feed").await.unwrap().forget(); // the crashed reader
    let mut live = redlock.try_read_lock("feed").await.unwrap();
    // The live reader keeps extending; the crashed one must still age out.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut aged_out = false;
    while !aged_out && Instant::now() < deadline {
        live.extend().await.expect("live reader extends");
        aged_out = readers(&nodes, &key) == [1, 1, 1];
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        aged_out,
        "crashed reader never expired: {:?}",
        readers(&nodes, &key)
    );
    live.release().await.unwrap();
    redlock
        .try_write_lock("feed")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_writer_gets_in_under_a_continuous_stream_of_readers() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    // Readers arrive every 20 ms and hold 100 ms each: there is always one.
    let stream = {
        let (redlock, stop, reads) = (redlock.clone(), Arc::clone(&stop), Arc::clone(&reads));
        tokio::spawn(async move {
            let mut tasks = Vec::new();
            for _ in 0..1_000 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let (redlock, reads) = (redlock.clone(), Arc::clone(&reads));
                tasks.push(tokio::spawn(async move {
                    if let Ok(read) = redlock.try_read_lock("hot").await {
                        reads.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        let _ = read.release().await;
                    }
                }));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            futures::future::join_all(tasks).await;
        })
    };
    assert!(
        eventually(Duration::from_secs(5), || async {
            reads.load(Ordering::Relaxed) >= 5
        })
        .await,
        "the reader stream never started"
    );
    let patient = redlock
        .with_options(&LockOptions {
            wait: Duration::from_secs(20),
            ..*redlock.options()
        })
        .unwrap();
    let write = patient.write_lock("hot").await;
    let readers_before = reads.load(Ordering::Relaxed);
    let still_streaming = !stream.is_finished();
    stop.store(true, Ordering::Relaxed);
    let write = write.expect("the writer got in within its wait");
    assert!(still_streaming, "readers stopped before the writer got in");
    write.release().await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), stream)
        .await
        .expect("stream ended")
        .unwrap();
    assert!(readers_before >= 5);
}

#[tokio::test]
async fn read_write_locks_survive_a_minority_down_and_unwind_without_a_majority() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let key = redlock.key("stock");
    nodes.kill(3).unwrap();
    nodes.kill(4).unwrap();
    let read = redlock.try_read_lock("stock").await.unwrap();
    assert!(redlock.try_write_lock("stock").await.is_err());
    read.release().await.unwrap();
    let write = redlock.try_write_lock("stock").await.unwrap();
    assert!(redlock.try_read_lock("stock").await.is_err());
    write.release().await.unwrap();
    nodes.kill(2).unwrap();
    let err = redlock.try_read_lock("stock").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert_eq!(
        readers(&nodes, &key)[..2],
        [0, 0],
        "failed reader not unwound"
    );
    let err = redlock.try_write_lock("stock").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    assert_eq!(writer(&nodes, &key)[..2], [false, false]);
}

#[tokio::test]
async fn a_write_lock_dropped_while_waiting_removes_its_intent() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let key = redlock.key("doc");
    let read = redlock.try_read_lock("doc").await.unwrap();
    let writer = tokio::spawn({
        let redlock = redlock.clone();
        async move { redlock.write_lock("doc").await }
    });
    let recorded = eventually(Duration::from_secs(5), || async {
        intent(&nodes, &key) == [true; 3]
    })
    .await;
    assert!(recorded, "the waiting writer never recorded its intent");
    writer.abort();
    assert!(writer.await.unwrap_err().is_cancelled());
    let cleared = eventually(Duration::from_secs(5), || async {
        intent(&nodes, &key) == [false; 3]
    })
    .await;
    assert!(cleared, "intent left behind: {:?}", intent(&nodes, &key));
    // So new readers are welcome again.
    redlock
        .try_read_lock("doc")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    read.release().await.unwrap();
}

/// A hold as the client saw it: from the acquire's return to the release
/// call (or the deadline, if earlier).
#[derive(Debug, Clone, Copy)]
struct Hold {
    write: bool,
    from: Instant,
    to: Instant,
}

#[tokio::test]
async fn readers_and_writers_never_overlap_under_contention_with_a_node_killed() {
    let nodes = cluster(5);
    let redlock = redlock(&nodes, Duration::from_secs(2));
    let holds = Arc::new(std::sync::Mutex::new(Vec::<Hold>::new()));
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let (redlock, holds) = (redlock.clone(), Arc::clone(&holds));
            tokio::spawn(async move {
                let write = task % 3 == 0;
                let end = Instant::now() + Duration::from_secs(2);
                while Instant::now() < end {
                    let (from, to, release) = if write {
                        let Ok(lock) = redlock.try_write_lock("ledger").await else {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            continue;
                        };
                        let (from, deadline) = (Instant::now(), lock.deadline());
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        // The hold ends before the release is sent.
                        let to = Instant::now().min(deadline);
                        (from, to, tokio::spawn(lock.release()))
                    } else {
                        let Ok(lock) = redlock.try_read_lock("ledger").await else {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            continue;
                        };
                        let (from, deadline) = (Instant::now(), lock.deadline());
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        // The hold ends before the release is sent.
                        let to = Instant::now().min(deadline);
                        (from, to, tokio::spawn(lock.release()))
                    };
                    holds.lock().unwrap().push(Hold { write, from, to });
                    let _ = release.await;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;
    nodes.kill(2).unwrap();
    for task in tasks {
        task.await.unwrap();
    }
    let holds = holds.lock().unwrap().clone();
    let writes = holds.iter().filter(|h| h.write).count();
    assert!(
        writes > 0 && holds.len() > writes,
        "no mix of holds: {holds:?}"
    );
    // Readers may overlap each other; a writer overlaps no one.
    let spans: Vec<_> = holds.iter().map(|h| (h.from, h.to, h.write)).collect();
    common::assert_no_conflicting_overlap(&spans, |a, b| *a || *b);
}

#[tokio::test]
async fn fence_tokens_increase_from_writer_to_writer_and_order_readers_against_writers() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    let mut last = redquorum::FenceToken::new(0);
    for round in 0..3 {
        let write = redlock.write_lock("fenced").await.unwrap();
        let token = write.fence().await.expect("fencing is on by default");
        assert!(token > last, "round {round}: writer {token} after {last}");
        write.release().await.unwrap();
        last = token;
    }
    // Readers: above every earlier writer; the next writer is above every reader.
    let a = redlock.read_lock("fenced").await.unwrap();
    let b = redlock.read_lock("fenced").await.unwrap();
    let (ta, tb) = (a.fence().await.unwrap(), b.fence().await.unwrap());
    assert!(
        ta > last && tb > last,
        "readers {ta}, {tb} after writer {last}"
    );
    a.release().await.unwrap();
    b.release().await.unwrap();
    let write = redlock.write_lock("fenced").await.unwrap();
    assert!(write.fence().await.unwrap() > ta.max(tb));
    write.release().await.unwrap();

    let unfenced = redlock
        .with_options(&LockOptions {
            fencing: false,
            ..*redlock.options()
        })
        .unwrap();
    let read = unfenced.read_lock("fenced").await.unwrap();
    assert!(matches!(
        read.fence().await,
        Err(redquorum::Error::FencingOff { .. })
    ));
    read.release().await.unwrap();
    let write = unfenced.write_lock("fenced").await.unwrap();
    assert!(matches!(
        write.fence().await,
        Err(redquorum::Error::FencingOff { .. })
    ));
    write.release().await.unwrap();
}

#[tokio::test]
async fn a_writer_that_expired_unreleased_is_fenced_off_by_the_next_one() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_millis(300));
    let stale = redlock.write_lock("fenced-expiry").await.unwrap();
    let old = stale.fence().await.unwrap();
    stale.forget(); // a paused holder: its keys expire, it never releases
    let patient = redlock
        .with_options(&LockOptions {
            wait: Duration::from_secs(5),
            ..*redlock.options()
        })
        .unwrap();
    let next = patient.write_lock("fenced-expiry").await.unwrap();
    assert!(next.fence().await.unwrap() > old);
    next.release().await.unwrap();
}

#[tokio::test]
async fn read_and_write_locks_get_no_token_when_no_quorum_can_store_it() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(5));
    // Two of three nodes hold a counter the fencing operations refuse to use.
    for i in [0, 2] {
        nodes
            .command(
                i,
                &["SET", &redlock.fence_key("fence-broken"), "not-a-number"],
            )
            .unwrap();
    }
    let write = redlock.try_write_lock("fence-broken").await.unwrap();
    let err = write.fence().await.unwrap_err();
    assert!(matches!(err, Error::FenceUnavailable { .. }), "{err}");
    write.release().await.unwrap();
    let read = redlock.try_read_lock("fence-broken").await.unwrap();
    let err = read.fence().await.unwrap_err();
    assert!(matches!(err, Error::FenceUnavailable { .. }), "{err}");
    read.release().await.unwrap();
    // Nothing was left behind: no writer, no intent, no reader.
    let key = redlock.key("fence-broken");
    common::settles("records left", vec![None, None, None], || {
        common::kinds(&nodes, &key)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_lock_dropped_on_a_thread_without_a_runtime_is_released() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(30));
    let writer = redlock.try_write_lock("threaded").await.unwrap();
    // Drop runs where no runtime is entered; the release must still be spawned
    // (on the Redlock's runtime), not skipped until the 30 s ttl.
    std::thread::spawn(move || drop(writer))
        .join()
        .expect("no panic");
    let free = common::eventually(LANDS_WITHIN, || async {
        redlock.try_write_lock("threaded").await.map(drop).is_ok()
    })
    .await;
    assert!(free, "the dropped write lock was not released");
}
