//! `redquorum nodes up --cluster S [--replicas R]`: each master a local
//! Redis Cluster, exported as `redis-cluster://` URLs, and `nodes down`
//! stopping every process of every cluster.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::{BIN, NodesDownOnDrop, eventually, free_base_port};
use redquorum_harness::RespConn;

/// A cluster node's bus port is its port + 10000.
const BUS_OFFSET: u16 = 10_000;

/// The first of `n` consecutive free ports whose bus ports are free too.
fn free_cluster_base_port(n: u16) -> u16 {
    for _ in 0..100 {
        let base = free_base_port(n);
        let buses_free = (base..base + n).all(|p| {
            p.checked_add(BUS_OFFSET)
                .is_some_and(|bus| TcpListener::bind(("127.0.0.1", bus)).is_ok())
        });
        if buses_free {
            return base;
        }
    }
    panic!("no {n} free consecutive ports with free bus ports");
}

fn nodes(state: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("nodes")
        .args(args)
        .arg("--dir")
        .arg(state)
        .env_remove("REDQUORUM_NODES_DIR")
        .output()
        .unwrap()
}

fn info(port: u16, args: &[&str]) -> String {
    RespConn::connect(port)
        .and_then(|mut conn| conn.command(args))
        .ok()
        .and_then(|reply| reply.as_text())
        .unwrap_or_default()
}

fn answers(port: u16) -> bool {
    info(port, &["PING"]) == "PONG"
}

/// The export line for masters of `shards` primaries each taking
/// `per_master` ports from `base`.
fn cluster_line(base: u16, masters: u16, shards: u16, per_master: u16) -> String {
    let urls: Vec<String> = (0..masters)
        .map(|m| {
            let first = base + m * per_master;
            let seeds: Vec<String> = (1..shards)
                .map(|s| format!("node=127.0.0.1:{}", first + s))
                .collect();
            if seeds.is_empty() {
                format!("redis-cluster://127.0.0.1:{first}")
            } else {
                format!("redis-cluster://127.0.0.1:{first}?{}", seeds.join("&"))
            }
        })
        .collect();
    format!("export REDQUORUM_NODES={}", urls.join(","))
}

#[test]
fn nodes_up_cluster_exports_one_cluster_url_per_master_and_nodes_down_stops_every_process() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let _cleanup = NodesDownOnDrop(state.clone());
    let base = free_cluster_base_port(6);
    let up = nodes(
        &state,
        &[
            "up",
            "-n",
            "3",
            "--cluster",
            "2",
            "--base-port",
            &base.to_string(),
        ],
    );
    assert!(up.status.success(), "{up:?}");
    let line = String::from_utf8(up.stdout).unwrap();
    assert_eq!(line.trim(), cluster_line(base, 3, 2, 2));
    let ports: Vec<u16> = (base..base + 6).collect();
    for &port in &ports {
        // Every process is up (after `up` exited) in a formed cluster: two
        // ranges, all 16384 slots served.
        let cluster = info(port, &["CLUSTER", "INFO"]);
        assert!(cluster.contains("cluster_state:ok"), "{port}: {cluster}");
        assert!(
            cluster.contains("cluster_slots_ok:16384"),
            "{port}: {cluster}"
        );
        assert!(
            cluster.contains("cluster_known_nodes:2"),
            "{port}: {cluster}"
        );
    }
    // Up again: the same URLs.
    let again = nodes(&state, &["up", "-n", "3", "--cluster", "2"]);
    assert!(again.status.success(), "{again:?}");
    assert_eq!(String::from_utf8(again.stdout).unwrap(), line);

    let down = nodes(&state, &["down"]);
    assert!(down.status.success(), "{down:?}");
    assert!(
        eventually(Duration::from_secs(10), || ports
            .iter()
            .all(|&p| !answers(p))),
        "cluster nodes still answer after down"
    );
    assert!(!state.exists(), "state dir left behind");
}

#[test]
fn nodes_up_cluster_with_replicas_exports_the_primaries_and_links_the_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let _cleanup = NodesDownOnDrop(state.clone());
    let base = free_cluster_base_port(4);
    let up = nodes(
        &state,
        &[
            "up",
            "-n",
            "1",
            "--cluster",
            "2",
            "--replicas",
            "1",
            "--base-port",
            &base.to_string(),
        ],
    );
    assert!(up.status.success(), "{up:?}");
    let line = String::from_utf8(up.stdout).unwrap();
    let first = base;
    assert_eq!(line.trim(), cluster_line(first, 1, 2, 4));
    for replica in [first + 2, first + 3] {
        let replication = info(replica, &["INFO", "replication"]);
        assert!(
            replication.contains("role:slave"),
            "{replica}: {replication}"
        );
        assert!(
            replication.contains("master_link_status:up"),
            "{replica}: {replication}"
        );
    }
    let down = nodes(&state, &["down"]);
    assert!(down.status.success(), "{down:?}");
    assert!(
        eventually(Duration::from_secs(10), || (first..first + 4)
            .all(|p| !answers(p))),
        "cluster nodes still answer after down"
    );
}

#[test]
fn nodes_up_with_a_bad_cluster_size_or_replicas_alone_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    for (args, wanted) in [
        (&["up", "--cluster", "0"][..], "1 to 16 shards"),
        (&["up", "--cluster", "17"][..], "1 to 16 shards"),
        (
            &["up", "--cluster", "2", "--replicas", "2"][..],
            "--replicas",
        ),
        (&["up", "--replicas", "1"][..], "--cluster"),
        (
            &["up", "--cluster", "2", "--base-port", "65000"][..],
            "bus port",
        ),
    ] {
        let out = nodes(&state, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {stderr}");
        assert!(stderr.contains(wanted), "{args:?}: {stderr}");
        assert!(!state.exists(), "{args:?} started something");
    }
}
