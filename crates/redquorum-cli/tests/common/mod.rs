//! What the CLI test files share: the binary, nodes, bounded waits, and
//! looking at (and cleaning up) the processes a command under `exec` started.

// Each test file uses its own subset of these helpers.
#![allow(dead_code)]

use std::fs;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use redquorum_harness::Cluster;

#[path = "../fixtures/main_thread_exits.rs"]
pub(crate) mod main_thread_exits;
pub(crate) mod served;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_redquorum");

pub(crate) fn cluster(n: usize) -> Cluster {
    Cluster::start(n).unwrap_or_else(|e| panic!("cannot start {n} redis nodes: {e}"))
}

/// `redquorum` with the cluster's nodes in `REDQUORUM_NODES`.
pub(crate) fn redquorum(nodes: &Cluster) -> Command {
    let mut command = Command::new(BIN);
    command
        .env("REDQUORUM_NODES", nodes.urls().join(","))
        .env_remove("REDQUORUM_NODES_DIR")
        .stdin(Stdio::null());
    command
}

/// Runs `redquorum args` without `REDQUORUM_NODES` (the command starts its
/// own nodes): its output, stdout and stderr.
pub(crate) fn run(args: &[&str]) -> (Output, String, String) {
    let out = Command::new(BIN)
        .env_remove("REDQUORUM_NODES")
        .args(args)
        .output()
        .expect("run redquorum");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

/// The JSON report of a run that must have passed: panics with its status,
/// stdout and stderr if it did not, or if stdout is not one JSON value.
pub(crate) fn passed_report((out, stdout, stderr): &(Output, String, String)) -> serde_json::Value {
    assert!(
        out.status.success(),
        "status {:?}\n{stdout}\n{stderr}",
        out.status
    );
    serde_json::from_str(stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON value ({e}): {stdout}"))
}

/// Waits for `child` at most `within`; kills it and panics past that.
pub(crate) fn wait_within(child: &mut Child, within: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if start.elapsed() > within {
            let _ = child.kill();
            let _ = child.wait();
            panic!("redquorum still running after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `condition` every 20 ms for at most `within`.
pub(crate) fn eventually(within: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if condition() {
            return true;
        }
        if start.elapsed() > within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pid the command under `exec` wrote to `pidfile`, once it has (at most 20 s).
pub(crate) fn started_pid(pidfile: &Path) -> String {
    assert!(
        eventually(Duration::from_secs(20), || fs::read_to_string(pidfile)
            .is_ok_and(|p| p.ends_with('\n'))),
        "the command never started"
    );
    fs::read_to_string(pidfile).unwrap().trim().to_owned()
}

/// True while `pid` is a process that can still run: one of its threads has
/// not exited. The process's own state is its main thread's, which shows a
/// zombie (`Zl`) when that thread alone exited (`pthread_exit`) while others
/// run on; a real zombie (every thread exited) only waits to be reaped.
pub(crate) fn is_alive(pid: &str) -> bool {
    let Ok(threads) = fs::read_dir(Path::new("/proc").join(pid.trim()).join("task")) else {
        return false;
    };
    threads.flatten().any(|thread| {
        let Ok(stat) = fs::read_to_string(thread.path().join("stat")) else {
            return false;
        };
        // The state follows the command name, which is in parentheses and may hold anything.
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        !matches!(state.and_then(|s| s.chars().next()), Some('Z' | 'X') | None)
    })
}

/// SIGKILLs, when dropped, the processes a test recorded that are still alive,
/// so a failing test leaves no command of its own running.
#[derive(Debug, Default)]
pub(crate) struct KillOnDrop(pub(crate) Vec<String>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in self.0.iter().filter(|pid| is_alive(pid)) {
            let _ = Command::new("kill").args(["-KILL", pid]).status();
        }
    }
}

/// The lines of `path` (empty if it does not exist yet).
pub(crate) fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Node URLs of `nodes` that log in as `user` (created on every node with
/// all keys, channels and commands allowed).
pub(crate) fn urls_as(nodes: &Cluster, user: &str) -> String {
    const PASSWORD: &str = "pw-for-tests";
    let pass = format!(">{PASSWORD}");
    for i in 0..nodes.len() {
        nodes
            .command(
                i,
                &["ACL", "SETUSER", user, "on", &pass, "~*", "&*", "+@all"],
            )
            .expect("ACL SETUSER");
    }
    nodes.urls_as(user, PASSWORD).join(",")
}

/// The lock key of `resource` with the default prefix (the library's layout:
/// the name in braces).
pub(crate) fn lock_key(resource: &str) -> String {
    format!("lock:{{{resource}}}")
}

/// Makes `owner` (another client) hold `resource`'s plain lock on node
/// `index` for `ttl`, as the lock script would have.
pub(crate) fn plant_holder(
    nodes: &Cluster,
    index: usize,
    resource: &str,
    owner: &str,
    ttl: Duration,
) {
    let now = nodes.command(index, &["TIME"]).unwrap();
    let secs: i64 = match now {
        redquorum_harness::Reply::Array(Some(parts)) => {
            parts[0].as_text().unwrap().parse().unwrap()
        }
        other => panic!("TIME answered {other:?}"),
    };
    let expiry = ((secs + 1) * 1000 + ttl.as_millis() as i64).to_string();
    let key = lock_key(resource);
    let field = format!("h:{owner}");
    nodes
        .command(index, &["HSET", &key, "kind", "lock", &field, &expiry])
        .unwrap();
    nodes
        .command(index, &["PEXPIRE", &key, &ttl.as_millis().to_string()])
        .unwrap();
}

/// The first of `n` consecutive free loopback ports (for `nodes up --base-port`).
pub(crate) fn free_base_port(n: u16) -> u16 {
    for _ in 0..50 {
        let base = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if base.checked_add(n).is_some()
            && (base..base + n).all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        {
            return base;
        }
    }
    panic!("no {n} free consecutive ports");
}

/// Runs `nodes down` when dropped, so daemonized nodes never outlive a failed test.
pub(crate) struct NodesDownOnDrop(pub(crate) std::path::PathBuf);

impl Drop for NodesDownOnDrop {
    fn drop(&mut self) {
        if self.0.exists() {
            let _ = Command::new(BIN)
                .args(["nodes", "down", "--dir"])
                .arg(&self.0)
                .output();
        }
    }
}
