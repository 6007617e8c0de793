//! `redquorum exec` on a cluster master (`redis-cluster://`) beside single
//! servers: every `exec` is a fresh process, so its one acquire is a
//! client's first call, and a healthy cluster must vote in it.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{BIN, cluster, eventually, lock_key, wait_within};
use redquorum_harness::ShardedCluster;

/// Fresh `exec`s per test.
const RUNS: usize = 10;

/// How long something already sent may take to land on a loaded machine.
const LANDS_WITHIN: Duration = Duration::from_secs(8);

/// One local cluster of three shards, then the URLs of it and of `singles`.
fn cluster_beside(singles: &redquorum_harness::Cluster) -> (ShardedCluster, String) {
    let sharded = ShardedCluster::start(1, 3, 0)
        .unwrap_or_else(|e| panic!("cannot start a local cluster: {e}"));
    let mut urls = vec![sharded.url(0)];
    urls.extend(singles.urls());
    let urls = urls.join(",");
    (sharded, urls)
}

/// `redquorum exec` on `urls` (default node timeout, 100 ms).
fn exec(urls: &str, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .env_remove("REDQUORUM_NODES")
        .env_remove("REDQUORUM_NODES_DIR")
        .arg("--nodes")
        .arg(urls)
        .arg("exec")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}

#[test]
fn every_fresh_exec_takes_a_healthy_cluster_masters_vote() {
    let singles = cluster(2);
    let (sharded, urls) = cluster_beside(&singles);
    let dir = tempfile::tempdir().unwrap();
    for run in 0..RUNS {
        let (held, go) = (
            dir.path().join(format!("held-{run}")),
            dir.path().join(format!("go-{run}")),
        );
        // The command says it runs, then waits (at most about 20 s) to be let go.
        let script = format!(
            "touch '{}'; i=0; while [ ! -e '{}' ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i+1)); done",
            held.display(),
            go.display()
        );
        let resource = format!("first-{run}");
        let stderr = dir.path().join(format!("stderr-{run}"));
        let mut child = exec(&urls, &[&resource, "--", "sh", "-c", &script])
            .stderr(fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let running = eventually(Duration::from_secs(20), || {
            held.exists() || child.try_wait().unwrap().is_some()
        });
        assert!(
            running && held.exists(),
            "run {run}: the command never ran: {}",
            read(&stderr)
        );
        // The single servers made the quorum; the cluster's acquire, sent
        // in the same fan-out, lands there too.
        let key = lock_key(&resource);
        let on_cluster = eventually(LANDS_WITHIN, || {
            sharded
                .command_for_key(0, &key, &["EXISTS", &key])
                .ok()
                .and_then(|reply| reply.as_int())
                == Some(1)
        });
        fs::write(&go, "").unwrap();
        let status = wait_within(&mut child, Duration::from_secs(30));
        assert!(
            on_cluster,
            "run {run}: a fresh exec did not take the healthy cluster's vote: {}",
            read(&stderr)
        );
        assert!(status.success(), "run {run}: {status:?}: {}", read(&stderr));
    }
}

#[test]
fn every_fresh_exec_acquires_when_it_needs_the_cluster_masters_vote() {
    let singles = cluster(2);
    singles.kill(1).unwrap();
    let (_sharded, urls) = cluster_beside(&singles);
    for run in 0..RUNS {
        // Two of three: the single server left, and the cluster.
        let output = exec(&urls, &[&format!("needed-{run}"), "--", "true"])
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "run {run}: {:?}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// A file's text, for a failure message.
fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}
