//! `stop_started_servers`, what a process ending on a signal calls: every
//! server this process started is killed and its data dir removed, and no
//! node starts after it. Its own test binary (one process), since it stops
//! the servers of every test in the process for good.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use redquorum_harness::{Cluster, Reply, stop_started_servers};

/// Node `index`'s pid and data dir, as it reports them.
fn pid_and_dir(cluster: &Cluster, index: usize) -> (u32, PathBuf) {
    let info = cluster.command(index, &["INFO", "server"]).unwrap();
    let pid = info
        .as_text()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("process_id:"))
                .and_then(|pid| pid.trim().parse().ok())
        })
        .expect("INFO names the pid");
    let dir = match cluster.command(index, &["CONFIG", "GET", "dir"]).unwrap() {
        Reply::Array(Some(parts)) => PathBuf::from(parts[1].as_text().expect("a dir")),
        other => panic!("CONFIG GET dir answered {other:?}"),
    };
    (pid, dir)
}

/// True while `pid` runs (not gone, not a zombie waiting to be reaped).
fn runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        !matches!(state.and_then(|s| s.chars().next()), Some('Z' | 'X') | None)
    })
}

#[test]
fn every_started_server_is_killed_its_dir_removed_and_no_node_starts_after() {
    let cluster = Cluster::start(2).unwrap();
    let stopped = Cluster::start(1).unwrap();
    stopped.kill(0).unwrap();
    let nodes: Vec<(u32, PathBuf)> = (0..2).map(|i| pid_and_dir(&cluster, i)).collect();
    assert!(nodes.iter().all(|(pid, dir)| runs(*pid) && dir.is_dir()));

    // The killed node was forgotten: only the two running are stopped.
    assert_eq!(stop_started_servers(), 2);
    let deadline = Instant::now() + Duration::from_secs(10);
    while nodes.iter().any(|(pid, _)| runs(*pid)) {
        assert!(Instant::now() < deadline, "still running: {nodes:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    for (_, dir) in &nodes {
        let root = dir.parent().expect("a node dir is below its cluster's");
        assert!(!root.exists(), "{} left", root.display());
    }
    assert!(Cluster::start(1).is_err(), "a node started after the sweep");
    assert!(
        stopped.restart(0).is_err(),
        "a node restarted after the sweep"
    );
    // Dropping the clusters afterwards is harmless.
    drop(cluster);
    drop(stopped);
}
