//! A `redquorum torture` stopped by SIGTERM or SIGINT (Ctrl-C) leaves
//! nothing behind: it exits 128 + the signal, every `redis-server` it
//! started is gone, and so are their data directories. A signal skips the
//! destructors that stop the nodes at a normal end, so this needs its own
//! handling (`src/interrupt.rs`, the harness's registry of started servers).

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{BIN, KillOnDrop, eventually, is_alive, wait_within};

/// How long a loaded machine may take to start the run's nodes.
const STARTED_WITHIN: Duration = Duration::from_secs(90);
/// How long the command may take to stop once signalled.
const STOPPED_WITHIN: Duration = Duration::from_secs(30);

/// The live descendants of `pid`, from `/proc/<pid>/task/*/children`.
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut next = 0;
    let mut parents = vec![pid];
    // Bounded: each round reads one process's children, and a test's tree is small.
    while let Some(&parent) = parents.get(next) {
        next += 1;
        if next > 10_000 {
            break;
        }
        let Ok(tasks) = fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children = fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                found.push(child);
                parents.push(child);
            }
        }
    }
    found
}

/// The `redis-server` processes below `pid`, each with its data dir. A
/// server rewrites its command line (`redis-server 127.0.0.1:PORT`), so it
/// is known by its `comm`, and its dir by its working directory (a server
/// changes into its `--dir`).
fn servers_below(pid: u32) -> Vec<(u32, PathBuf)> {
    descendants(pid)
        .into_iter()
        .filter(|child| {
            fs::read_to_string(format!("/proc/{child}/comm"))
                .is_ok_and(|comm| comm.trim() == "redis-server")
        })
        .filter_map(|server| {
            let dir = fs::read_link(format!("/proc/{server}/cwd")).ok()?;
            Some((server, dir))
        })
        .collect()
}

/// Starts a 60 s torture, waits until its nodes run, sends `signal`
/// (`-TERM`, `-INT`) and checks what is left: the exit status must be
/// `expected`, and no server or data directory of the run may remain.
fn torture_stopped_by(signal: &str, expected: i32) {
    let mut child = Command::new(BIN)
        .env_remove("REDQUORUM_NODES")
        .args(["torture", "--duration", "60s", "--seed", "1", "-n", "3"])
        .args(["--clients", "4", "--resources", "2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start redquorum torture");
    let mut guard = KillOnDrop(vec![child.id().to_string()]);
    let (lines_tx, lines) = mpsc::channel();
    let stderr = child.stderr.take().expect("piped stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    // The banner comes once every node, proxy and the store are up.
    let deadline = Instant::now() + STARTED_WITHIN;
    let mut said = Vec::new();
    while !said
        .iter()
        .any(|l: &String| l.starts_with("torture: ") && l.contains("clients"))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => said.push(line),
            Err(e) => panic!("no banner within {STARTED_WITHIN:?} ({e}): {said:?}"),
        }
    }
    let servers = servers_below(child.id());
    guard
        .0
        .extend(servers.iter().map(|(pid, _)| pid.to_string()));
    // 3 masters and the protected store.
    assert!(servers.len() >= 4, "servers below the run: {servers:?}");
    for (_, dir) in &servers {
        assert!(dir.is_dir(), "{} does not exist", dir.display());
    }
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success());
    let status = wait_within(&mut child, STOPPED_WITHIN);
    said.extend(lines.try_iter());
    assert_eq!(status.code(), Some(expected), "status {status:?}: {said:#?}");
    assert!(
        eventually(Duration::from_secs(10), || servers
            .iter()
            .all(|(pid, _)| !is_alive(&pid.to_string()))),
        "servers left running after {signal}: {servers:?}"
    );
    // A node's dir is below the temp dir of its cluster: both must be gone.
    for (_, dir) in &servers {
        let root = dir.parent().expect("a node dir has a parent");
        assert!(!root.exists(), "{} left after {signal}", root.display());
    }
    assert!(
        said.iter().any(|l| l.contains("interrupted")),
        "nothing said about the interruption: {said:#?}"
    );
}

#[test]
fn sigterm_stops_a_torture_and_its_nodes_with_status_143() {
    torture_stopped_by("-TERM", 128 + 15);
}

#[test]
fn sigint_stops_a_torture_and_its_nodes_with_status_130() {
    torture_stopped_by("-INT", 128 + 2);
}
