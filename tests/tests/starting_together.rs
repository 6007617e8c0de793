//! Callers of one process that start waiting on one lock together (a pool
//! of workers starting): one first attempt at a time, and those behind a
//! winning one line up for its release instead of trying against the hold
//! (`wait/first_try.rs`). Counted as acquires on the nodes, with a backoff
//! of an hour: a caller that missed the release it waits for could not get
//! the lock before the bounded wait below gives up.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{cluster, warm_up};
use redquorum::{LockOptions, Redlock};

const WORKERS: usize = 8;
/// Bound on the whole run (generous for a loaded machine).
const WITHIN: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_starting_together_send_about_one_attempt_per_hold() {
    let cluster = cluster(3);
    let redlock = Redlock::builder()
        .nodes(cluster.urls())
        .lock_options(LockOptions {
            wait: Duration::from_secs(3600),
            retry_delay: Duration::from_secs(3600),
            retry_jitter: Duration::ZERO,
            ..LockOptions::default()
        })
        .build()
        .expect("valid configuration");
    warm_up(&redlock).await;
    // Each acquire runs one SET on every node (the native command alone).
    let sets = |i| common::calls(&cluster, i, "set");
    let before: Vec<u64> = (0..3).map(sets).collect();
    let start = Arc::new(tokio::sync::Barrier::new(WORKERS));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (redlock, start) = (redlock.clone(), Arc::clone(&start));
            tokio::spawn(async move {
                start.wait().await;
                let lock = redlock.lock("together").await.expect("acquired");
                tokio::time::sleep(Duration::from_millis(10)).await;
                lock.release().await.expect("released");
            })
        })
        .collect();
    tokio::time::timeout(WITHIN, futures::future::try_join_all(workers))
        .await
        .expect("every worker got the lock: none missed the release it waited for")
        .expect("workers");
    for (i, before) in before.into_iter().enumerate() {
        // One attempt per hold, give or take a caller that reached the gate
        // just as a hold was released. Racing first attempts cost one each
        // and a retry as the head of the line: 2 * WORKERS - 1 or more.
        let attempts = sets(i) - before;
        assert!(
            (WORKERS as u64..=WORKERS as u64 + 2).contains(&attempts),
            "node {i}: {attempts} acquires for {WORKERS} holds"
        );
    }
}
