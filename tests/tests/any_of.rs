//! Lock any of K on real nodes: holders spread over the K resources, all K
//! held means contended, a crashed holder's segment comes back, nodes down.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{cluster, redlock};
use redquorum::{Error, LockOptions};

const SEGMENTS: [&str; 4] = ["stock:0", "stock:1", "stock:2", "stock:3"];

#[tokio::test]
async fn k_holders_spread_over_k_resources_then_the_next_is_contended() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let attempts = (0..SEGMENTS.len()).map(|_| redlock.lock_any(&SEGMENTS));
    let held: Vec<_> = futures::future::join_all(attempts)
        .await
        .into_iter()
        .map(|r| r.expect("each holder found a free segment"))
        .collect();
    let taken: BTreeSet<usize> = held.iter().map(|(i, _)| *i).collect();
    assert_eq!(
        taken,
        (0..SEGMENTS.len()).collect(),
        "two holders on one segment"
    );
    for (index, lock) in &held {
        assert_eq!(lock.resource(), SEGMENTS[*index]);
    }
    let err = redlock.try_lock_any(&SEGMENTS).await.unwrap_err();
    assert!(matches!(err, Error::Contended { .. }), "{err:?}");
    let impatient = redlock
        .with_options(&LockOptions {
            wait: Duration::from_millis(200),
            ..*redlock.options()
        })
        .unwrap();
    let err = impatient.lock_any(&SEGMENTS).await.unwrap_err();
    assert!(matches!(err, Error::WaitTimeout { .. }), "{err:?}");
    for (_, lock) in held {
        lock.release().await.unwrap();
    }
}

#[tokio::test]
async fn an_empty_list_is_a_named_error() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let none: [&str; 0] = [];
    assert!(matches!(
        redlock.try_lock_any(&none).await,
        Err(Error::NoResources)
    ));
}

#[tokio::test]
async fn a_crashed_holders_segment_is_taken_after_it_expires_with_a_node_down() {
    let nodes = cluster(5);
    // A lease long enough that taking every segment (each with its fencing
    // rounds) cannot outlast the first one on a loaded machine.
    let redlock = redlock(&nodes, Duration::from_secs(2));
    nodes.kill(4).unwrap();
    let mut held = Vec::new();
    for _ in 0..SEGMENTS.len() {
        held.push(redlock.lock_any(&SEGMENTS).await.expect("a free segment"));
    }
    // The holder of one segment crashes; the others keep theirs alive.
    let (crashed, lock) = held.remove(0);
    lock.forget();
    let patient = redlock
        .with_options(&LockOptions {
            wait: Duration::from_secs(10),
            ..*redlock.options()
        })
        .unwrap();
    let waiting = tokio::spawn({
        let patient = patient.clone();
        async move { patient.lock_any(&SEGMENTS).await }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !waiting.is_finished() && tokio::time::Instant::now() < deadline {
        for (_, lock) in &mut held {
            lock.extend().await.expect("live holders extend");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (index, lock) = waiting
        .await
        .unwrap()
        .expect("the crashed segment came back");
    assert_eq!(index, crashed);
    lock.release().await.unwrap();
    for (_, lock) in held {
        lock.release().await.unwrap();
    }
}
