//! Cooperative revocation on real nodes: a holder that listens hears an
//! ask from another client and lets go; one that does not keeps the lock
//! (asking takes nothing); a free resource is free at once; too few nodes
//! to tell is `Unavailable`.

mod common;

use std::time::Duration;

use common::{cluster, held_on, redlock};
use redquorum::Error;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listening_holder_hears_another_clients_ask_and_lets_go() {
    let nodes = cluster(3);
    let (holder, asker) = (
        redlock(&nodes, Duration::from_secs(30)),
        redlock(&nodes, Duration::from_secs(30)),
    );
    let lock = holder.lock("report").await.unwrap();
    let listening = tokio::spawn(async move {
        lock.release_asked().await;
        lock.release().await
    });
    let free = asker.ask_release("report", Duration::from_secs(10)).await;
    assert!(free.unwrap(), "the holder never let go");
    assert!(listening.await.unwrap().is_ok());
    assert!(
        holder.try_lock("report").await.is_ok(),
        "not free after the ask"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asking_takes_nothing_from_a_holder_that_does_not_listen() {
    let nodes = cluster(3);
    let (holder, asker) = (
        redlock(&nodes, Duration::from_secs(30)),
        redlock(&nodes, Duration::from_secs(30)),
    );
    let lock = holder.lock("kept").await.unwrap();
    common::assert_held_on(&nodes, &lock, 3).await;
    let owner = lock.owner().to_string();
    let free = asker.ask_release("kept", Duration::from_millis(500)).await;
    assert!(!free.unwrap(), "free while its holder holds it");
    assert_eq!(held_on(&nodes, lock.key(), &owner), 3);
    // Nobody holds "other": free at once, without waiting.
    let started = std::time::Instant::now();
    assert!(
        asker
            .ask_release("other", Duration::from_secs(30))
            .await
            .unwrap()
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    lock.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_with_a_majority_down_is_unavailable() {
    let nodes = cluster(3);
    let asker = redlock(&nodes, Duration::from_secs(30));
    common::warm_up(&asker).await;
    nodes.kill(1).unwrap();
    nodes.kill(2).unwrap();
    let err = asker.ask_release("dark", Duration::ZERO).await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
}
