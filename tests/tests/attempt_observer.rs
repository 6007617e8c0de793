//! The attempt observer: every acquisition attempt is told, with the
//! owner token it stores, before it is sent — refused, dropped and
//! retried attempts too, which never hand their token to the caller.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{cluster, eventually, held_on, values};
use redquorum::{Error, OwnerToken, Redlock};

/// What an observer saw: (resource, kind, owner) per attempt, in order.
type Seen = Arc<Mutex<Vec<(String, &'static str, OwnerToken)>>>;

fn observed(redlock: &Redlock) -> (Redlock, Seen) {
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let redlock = redlock.with_attempt_observer(move |attempt| {
        log.lock().unwrap().push((
            attempt.resource().to_owned(),
            attempt.kind(),
            attempt.owner(),
        ));
    });
    (redlock, seen)
}

fn owners(seen: &Seen) -> Vec<OwnerToken> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(_, _, owner)| *owner)
        .collect()
}

#[tokio::test]
async fn a_dropped_attempts_keys_carry_the_token_the_observer_was_told() {
    let nodes = cluster(5);
    // A long node timeout keeps the attempt in flight while three nodes are paused.
    let redlock = Redlock::builder()
        .nodes(nodes.urls())
        .ttl(Duration::from_secs(30))
        .node_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    common::warm_up(&redlock).await;
    let (observing, seen) = observed(&redlock);
    for i in 0..3 {
        nodes.pause(i).unwrap();
    }
    let attempt = tokio::time::timeout(Duration::from_millis(300), observing.lock("dropped")).await;
    assert!(attempt.is_err(), "the attempt should still be in flight");
    let told = owners(&seen);
    assert_eq!(told.len(), 1, "{told:?}");
    // The two live nodes hold the key the dropped attempt set: its token
    // is the one the observer was told, though the caller never saw it.
    let key = redlock.key("dropped");
    assert_eq!(held_on(&nodes, &key, &told[0].to_string()), 2);
    for i in 0..3 {
        nodes.resume(i).unwrap();
    }
    let clean = eventually(Duration::from_secs(5), || async {
        values(&nodes, &key).iter().all(Option::is_none)
    })
    .await;
    assert!(clean, "leaked keys: {:?}", values(&nodes, &key));
}

#[tokio::test]
async fn a_refused_attempt_and_every_retry_of_a_waiting_acquire_are_told() {
    let nodes = cluster(3);
    let redlock = common::redlock(&nodes, Duration::from_secs(10));
    let (observing, seen) = observed(
        &redlock
            .with_options(&redquorum::LockOptions {
                wait: Duration::from_secs(5),
                ..*redlock.options()
            })
            .unwrap(),
    );
    let holder = redlock.lock("r").await.unwrap();
    let refused = observing.try_lock("r").await;
    assert!(
        matches!(refused, Err(Error::Contended { .. })),
        "{refused:?}"
    );
    let first = owners(&seen);
    assert_eq!(first.len(), 1);
    assert_ne!(first[0], holder.owner());
    // A waiting acquire: its first attempt is refused while the holder
    // holds, the one after the release is granted.
    let waiter = tokio::spawn({
        let observing = observing.clone();
        async move { observing.lock("r").await }
    });
    let tried = eventually(Duration::from_secs(5), || async {
        owners(&seen).len() >= 2
    })
    .await;
    assert!(tried, "the waiter never tried: {:?}", owners(&seen));
    holder.release().await.unwrap();
    let granted = waiter.await.unwrap().unwrap();
    let told = owners(&seen);
    assert!(told.len() >= 3, "{told:?}");
    assert_eq!(told.last(), Some(&granted.owner()));
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .all(|(r, kind, _)| r == "r" && *kind == "lock")
    );
    granted.release().await.unwrap();
}

#[tokio::test]
async fn every_kind_tells_its_attempts_with_the_token_it_holds_by() {
    let nodes = cluster(3);
    let (redlock, seen) = observed(&common::redlock(&nodes, Duration::from_secs(10)));
    let write = redlock.write_lock("w").await.unwrap();
    let read = redlock.read_lock("rd").await.unwrap();
    let permit = redlock.semaphore("s", 2).unwrap().acquire().await.unwrap();
    let reentrant = redlock.reentrant_owner().lock("re").await.unwrap();
    let held = [
        write.owner(),
        read.owner(),
        permit.owner(),
        reentrant.owner(),
    ];
    let told: Vec<_> = seen.lock().unwrap().clone();
    let kinds: Vec<_> = told.iter().map(|(r, k, _)| (r.as_str(), *k)).collect();
    assert_eq!(
        kinds,
        [
            ("w", "write"),
            ("rd", "read"),
            ("s", "permit"),
            ("re", "reentrant")
        ]
    );
    assert_eq!(told.iter().map(|t| t.2).collect::<Vec<_>>(), held);
    write.release().await.unwrap();
    read.release().await.unwrap();
    permit.release().await.unwrap();
    reentrant.release().await.unwrap();
}
