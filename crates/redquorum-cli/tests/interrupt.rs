//! A `redquorum torture` stopped by SIGTERM or SIGINT (Ctrl-C) leaves
//! nothing behind: it exits 128 + the signal, every `redis-server` it
//! started is gone, and so are their data directories. A signal skips the
//! destructors that stop the nodes at a normal end, so this needs its own
//! handling (`src/interrupt.rs`, the harness's registry of started servers).
//! `bench` stands for the other commands that start nodes (demo, mutants).

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
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

/// The `redis-server` processes below `pid`, each with its data dir once
/// it is in it. A server rewrites its command line (`redis-server
/// 127.0.0.1:PORT`), so it is known by its `comm`, and its dir by its
/// working directory: a server changes into its `--dir` as it starts, a
/// harness node's is `redquorum-nodes-*/nodeN`.
fn servers_below(pid: u32) -> Vec<(u32, Option<PathBuf>)> {
    descendants(pid)
        .into_iter()
        .filter(|child| {
            fs::read_to_string(format!("/proc/{child}/comm"))
                .is_ok_and(|comm| comm.trim() == "redis-server")
        })
        .map(|server| {
            let dir = fs::read_link(format!("/proc/{server}/cwd"))
                .ok()
                .filter(|dir| {
                    dir.parent()
                        .and_then(|root| root.file_name())
                        .is_some_and(|root| root.to_string_lossy().starts_with("redquorum-nodes-"))
                });
            (server, dir)
        })
        .collect()
}

/// A `redquorum` command started without nodes (it starts its own), its
/// stderr read line by line.
struct Run {
    child: Child,
    lines: mpsc::Receiver<String>,
    said: Vec<String>,
    guard: KillOnDrop,
}

impl Run {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .env_remove("REDQUORUM_NODES")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start redquorum");
        let guard = KillOnDrop(vec![child.id().to_string()]);
        let (lines_tx, lines) = mpsc::channel();
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = lines_tx.send(line);
            }
        });
        Self {
            child,
            lines,
            said: Vec::new(),
            guard,
        }
    }

    /// Waits (bounded) for a line on stderr that `wanted` accepts.
    fn wait_for_line(&mut self, wanted: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + STARTED_WITHIN;
        while !self.said.iter().any(|line| wanted(line)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.said.push(line),
                Err(e) => panic!("not said within {STARTED_WITHIN:?} ({e}): {:?}", self.said),
            }
        }
    }

    /// Waits (bounded) until at least `n` servers run below the command in their data dirs.
    fn wait_for_servers(&self, n: usize) {
        let pid = self.child.id();
        let settled = || {
            servers_below(pid)
                .iter()
                .filter(|(_, dir)| dir.is_some())
                .count()
        };
        assert!(
            eventually(STARTED_WITHIN, || settled() >= n),
            "fewer than {n} servers below the command: {:?}",
            servers_below(pid)
        );
    }

    /// Sends `signal` (`-TERM`, `-INT`) to the command once its servers
    /// run, and checks what is left: its exit status must be `expected`,
    /// and no server of its own or data directory may remain. Returns what
    /// it said on stderr.
    fn stop_with(mut self, signal: &str, expected: i32) -> Vec<String> {
        let servers = servers_below(self.child.id());
        self.guard
            .0
            .extend(servers.iter().map(|(pid, _)| pid.to_string()));
        let dirs: Vec<&PathBuf> = servers.iter().filter_map(|(_, dir)| dir.as_ref()).collect();
        for dir in &dirs {
            assert!(dir.is_dir(), "{} does not exist", dir.display());
        }
        let sent = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success());
        let status = wait_within(&mut self.child, STOPPED_WITHIN);
        // Until stderr closes (bounded: 10 s per line at most).
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(10)) {
            self.said.push(line);
        }
        let said = std::mem::take(&mut self.said);
        assert_eq!(
            status.code(),
            Some(expected),
            "status {status:?}: {said:#?}"
        );
        assert!(
            eventually(Duration::from_secs(10), || servers
                .iter()
                .all(|(pid, _)| !is_alive(&pid.to_string()))),
            "servers left running after {signal}: {servers:?}"
        );
        // A node's dir is below the temp dir of its cluster: both must be gone.
        for dir in &dirs {
            let root = dir.parent().expect("a node dir has a parent");
            assert!(!root.exists(), "{} left after {signal}", root.display());
        }
        said
    }
}

/// Starts a 60 s torture, and once it runs (its banner: every node, proxy
/// and the store are up) stops it with `signal`; it must say so.
fn torture_stopped_by(signal: &str, expected: i32) {
    let mut run = Run::start(&[
        "torture",
        "--duration",
        "60s",
        "--seed",
        "1",
        "-n",
        "3",
        "--clients",
        "4",
        "--resources",
        "2",
    ]);
    run.wait_for_line(|line| line.starts_with("torture: ") && line.contains("clients"));
    // 3 masters and the protected store.
    run.wait_for_servers(4);
    let said = run.stop_with(signal, expected);
    assert!(
        said.iter()
            .any(|l| l.starts_with("torture: interrupted by SIG") && l.contains("no verdict")),
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

/// Not only torture: a 60 s bench on local nodes it starts.
#[test]
fn sigterm_stops_a_bench_and_its_nodes_with_status_143() {
    let run = Run::start(&["bench", "--duration", "60s", "-n", "3"]);
    run.wait_for_servers(3);
    let said = run.stop_with("-TERM", 128 + 15);
    assert!(
        said.iter().any(|l| l.contains("interrupted by SIGTERM")),
        "nothing said about the interruption: {said:#?}"
    );
}
