//! A fresh client's first calls on a cluster master (`redis-cluster://`):
//! a healthy cluster votes in the very first acquire, whether the single
//! servers beside it make the quorum first or its vote is needed; calls
//! made while its first slot map is still read wait for it and go out in
//! the order they came; a cluster that no server answers votes `Down` at
//! once.
//!
//! Every `redquorum exec` is a fresh process, so its one acquire is a first
//! call: these tests build a fresh `Redlock` per round and look at its
//! first acquire only.

mod common;

use std::time::Duration;

use redquorum::{Error, NodeOutcome, Redlock};
use redquorum_harness::{Cluster, FaultProxy, ShardedCluster};

/// Fresh clients per test: each round's first acquire is what is tested.
const ROUNDS: usize = 5;

/// One local cluster of three shards (its first map connects three primaries).
fn one_cluster() -> ShardedCluster {
    ShardedCluster::start(1, 3, 0).unwrap_or_else(|e| panic!("cannot start a local cluster: {e}"))
}

/// A fresh client on `urls` with the CLI's node timeout (100 ms): a short
/// timeout is where a first map read cut short shows.
fn fresh(urls: &[String]) -> Redlock {
    Redlock::builder()
        .nodes(urls)
        .ttl(Duration::from_secs(10))
        .node_timeout(Duration::from_millis(100))
        .build()
        .expect("valid configuration")
}

/// The cluster master's URL first, then the single servers'.
fn cluster_and_singles(cluster: &ShardedCluster, singles: &Cluster) -> Vec<String> {
    let mut urls = vec![cluster.url(0)];
    urls.extend(singles.urls());
    urls
}

/// Whether the cluster holds `key` for `owner` (a plain lock's record is
/// its owner token).
fn cluster_holds(cluster: &ShardedCluster, key: &str, owner: &str) -> bool {
    cluster
        .command_for_key(0, key, &["GET", key])
        .ok()
        .and_then(|reply| reply.as_text())
        .is_some_and(|token| token == owner)
}

/// Whether `lock`'s hold shows on the cluster within what a loaded
/// machine needs for something already sent to land.
async fn lands_on_cluster(cluster: &ShardedCluster, lock: &redquorum::Lock) -> bool {
    let owner = lock.owner().to_string();
    common::eventually(common::LANDS_WITHIN, || {
        let held = cluster_holds(cluster, lock.key(), &owner);
        async move { held }
    })
    .await
}

/// Waits until no hold is left at `key` on the cluster (fails the test if
/// one stays).
async fn none_left_on_cluster(cluster: &ShardedCluster, key: &str) {
    common::settles("no hold left on the cluster", 0, || {
        cluster
            .command_for_key(0, key, &["EXISTS", key])
            .ok()
            .and_then(|reply| reply.as_int())
            .unwrap_or(-1)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_client_counts_a_healthy_cluster_masters_vote_in_its_first_acquire() {
    let cluster = one_cluster();
    let singles = common::cluster(2);
    let urls = cluster_and_singles(&cluster, &singles);
    for round in 0..ROUNDS {
        let redlock = fresh(&urls);
        let name = format!("first-{round}");
        // The two single servers make the quorum; the cluster's acquire,
        // entered in the same fan-out, must land there too.
        let lock = redlock.try_lock(&name).await.unwrap();
        assert!(
            lands_on_cluster(&cluster, &lock).await,
            "round {round}: the first acquire never reached the healthy cluster master; health: {:?}",
            redlock.health().await
        );
        lock.release().await.unwrap();
        redlock.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_clients_first_acquire_needs_and_gets_the_cluster_masters_vote() {
    let cluster = one_cluster();
    let singles = common::cluster(2);
    singles.kill(1).unwrap();
    let urls = cluster_and_singles(&cluster, &singles);
    for round in 0..ROUNDS {
        let redlock = fresh(&urls);
        // Two of three: the one single server left and the cluster.
        match redlock.try_lock(&format!("needed-{round}")).await {
            Ok(lock) => drop(lock.release().await.unwrap()),
            Err(err) => panic!("round {round}: the first acquire lost the cluster's vote: {err:?}"),
        }
        redlock.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_client_of_a_cluster_master_alone_acquires_at_its_first_call() {
    let cluster = one_cluster();
    let urls = vec![cluster.url(0)];
    for round in 0..ROUNDS {
        let redlock = fresh(&urls);
        match redlock.try_lock(&format!("alone-{round}")).await {
            Ok(lock) => drop(lock.release().await.unwrap()),
            Err(err) => panic!("round {round}: the cluster master alone refused: {err:?}"),
        }
        redlock.shutdown().await;
    }
}

/// `calls=` of `cmdstat_<name>` on the shard primary serving `key`
/// (commands run by the lock script count too).
fn calls_on_shard_of(cluster: &ShardedCluster, key: &str, name: &str) -> u64 {
    let info = cluster
        .command_for_key(0, key, &["INFO", "commandstats"])
        .ok()
        .and_then(|reply| reply.as_text())
        .unwrap_or_default();
    let prefix = format!("cmdstat_{name}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

/// The cluster's URL through a proxy to its only seed that holds the
/// connection's login until healed (stalled here): its first slot map
/// waits for the test. Keep the proxy: dropping it cuts the seed off.
fn stalled_seed(cluster: &ShardedCluster) -> (FaultProxy, String) {
    for node in 0..cluster.master(0).len() {
        cluster
            .master(0)
            .command(
                node,
                &[
                    "ACL",
                    "SETUSER",
                    "locker",
                    "on",
                    ">pw-First1",
                    "~*",
                    "&*",
                    "+@all",
                ],
            )
            .unwrap();
    }
    let seed = FaultProxy::start(&format!("127.0.0.1:{}", cluster.primary_port(0, 0))).unwrap();
    seed.stall();
    let url = format!("redis-cluster://locker:pw-First1@127.0.0.1:{}", seed.port());
    (seed, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_made_while_the_first_map_is_read_lands_after_its_acquire() {
    let cluster = one_cluster();
    let singles = common::cluster(2);
    let (seed, url) = stalled_seed(&cluster);
    let mut urls = vec![url];
    urls.extend(singles.urls());
    // A roomy node timeout: the map, read once healed, comes well within it.
    let redlock = Redlock::builder()
        .nodes(urls)
        .ttl(Duration::from_secs(30))
        .node_timeout(Duration::from_secs(2))
        .build()
        .unwrap();

    // The single servers grant; the cluster's acquire waits for the map...
    let lock = redlock.try_lock("parked").await.unwrap();
    let key = lock.key().to_owned();
    assert_eq!(
        calls_on_shard_of(&cluster, &key, "set"),
        0,
        "sent before the map"
    );
    // ...and so does the release, behind it.
    lock.release().await.unwrap();
    seed.heal();

    // The acquire is sent once the map is read...
    let acquired = common::eventually(common::LANDS_WITHIN, || {
        let sent = calls_on_shard_of(&cluster, &key, "set") >= 1;
        async move { sent }
    })
    .await;
    assert!(
        acquired,
        "the acquire made while the first map was read was never sent"
    );
    // ...and the release after it: no hold left for its TTL.
    none_left_on_cluster(&cluster, &key).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_acquire_lands_on_a_cluster_whose_map_came_after_the_node_timeout() {
    let cluster = one_cluster();
    let singles = common::cluster(2);
    let (seed, url) = stalled_seed(&cluster);
    let mut urls = vec![url];
    urls.extend(singles.urls());
    // A loaded machine can take longer than the node timeout to read a
    // cluster's first map (CLUSTER SLOTS, then every shard primary). This
    // one leaves the seed's connect timeout (ten node timeouts) room to
    // spare for the stall below.
    let node_timeout = Duration::from_millis(250);
    let redlock = Redlock::builder()
        .nodes(urls)
        .ttl(Duration::from_secs(30))
        .node_timeout(node_timeout)
        .build()
        .unwrap();
    let lock = redlock.try_lock("late-map").await.unwrap();
    // Past the acquire's wait (a node timeout from when it was sent, before
    // the quorum answered) when the map comes: its caller counted the
    // cluster as timed out.
    tokio::time::sleep(node_timeout * 3).await;
    seed.heal();
    // The acquire was part of the lease's fan-out: it lands all the same,
    // as one on the wire when its caller stopped waiting would have.
    assert!(
        lands_on_cluster(&cluster, &lock).await,
        "an acquire parked past its wait for the first map never reached the cluster; health: {:?}",
        redlock.health().await
    );
    // ...and the release after it takes it off.
    let key = lock.key().to_owned();
    lock.release().await.unwrap();
    none_left_on_cluster(&cluster, &key).await;
    redlock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_no_server_answers_votes_down_at_once_at_every_call() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    let redlock = fresh(&[format!("redis-cluster://127.0.0.1:{port}")]);
    for call in 0..3 {
        let err = redlock.try_lock("nobody").await.unwrap_err();
        assert!(matches!(err, Error::Unavailable { .. }), "{err}");
        let (_, outcome) = err
            .outcomes()
            .and_then(|outcomes| outcomes.iter().next())
            .expect("the cluster's outcome");
        // Not a wait for a map that will not come: `Down`, why said.
        assert!(
            matches!(outcome, NodeOutcome::Down(cause) if cause.to_string().contains("CLUSTER SLOTS")),
            "call {call}: {err:?}"
        );
    }
}
