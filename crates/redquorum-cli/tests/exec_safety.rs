//! `redquorum exec` never lets its command overlap the next holder: not when
//! the holder is cut off from the nodes (the command is stopped a margin
//! before the lease ends), not when `redquorum` itself is killed (the
//! guard kills the command and everything it started), not when `redquorum`
//! is stopped (the guard stops the command at the lease's stop time on its
//! own), and not when the guard alone is killed (`redquorum` kills what is
//! left and leaves the lock to its TTL). A process counts until every thread
//! of it has exited, even one whose main thread exited first.
//!
//! Each test has a first holder whose command keeps appending `first` lines to
//! a log, and a second `exec --wait` whose command appends `second` when it is
//! granted the lock. Once every process of the first is gone, the log is the
//! whole story: no `first` line may follow a `second` line.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use common::main_thread_exits::build_main_thread_exits;
use common::{
    BIN, KillOnDrop, cluster, eventually, is_alive, lines, started_pid, urls_as, wait_within,
};

/// `redquorum exec` on `nodes` (a URL list) for the resource `shared`.
fn exec_on(nodes: &str, args: &[&str], log: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .env_remove("REDQUORUM_NODES")
        .args(["--nodes", nodes, "exec"])
        .args(args)
        .env("LOG", log);
    command
}

/// The second holder: waits for the lock, then marks in the log that it has it.
fn second_holder(nodes: &str, log: &Path) -> Child {
    exec_on(
        nodes,
        &["--wait", "60s", "--ttl", "2s", "shared", "--", "sh", "-c"],
        log,
    )
    .arg(r#"echo second >> "$LOG""#)
    .spawn()
    .expect("spawn the second holder")
}

/// Waits until none of `pids` is alive, then checks that no line of the first
/// holder follows the second holder's mark in the log.
fn assert_first_stopped_before_second(pids: &[String], log: &Path) {
    assert!(
        eventually(Duration::from_secs(10), || !pids
            .iter()
            .any(|p| is_alive(p))),
        "processes of the first holder still run after the second was granted: {:?}",
        pids.iter().filter(|p| is_alive(p)).collect::<Vec<_>>()
    );
    let lines = lines(log);
    let second = lines
        .iter()
        .position(|l| l == "second")
        .unwrap_or_else(|| panic!("the second holder never ran: {lines:?}"));
    let overlap: Vec<&String> = lines[second..]
        .iter()
        .filter(|l| l.starts_with("first"))
        .collect();
    assert!(
        overlap.is_empty(),
        "the first holder wrote {} lines after the second was granted (line {second} of {}): {:?}",
        overlap.len(),
        lines.len(),
        &overlap[..overlap.len().min(5)]
    );
}

#[test]
fn a_holder_cut_off_from_every_node_stops_its_command_before_the_next_holder_is_granted() {
    let nodes = cluster(3);
    let (first_urls, second_urls) = (urls_as(&nodes, "first"), urls_as(&nodes, "second"));
    let dir = tempfile::tempdir().unwrap();
    let (log, pidfile) = (dir.path().join("log"), dir.path().join("pid"));
    // Ignores SIGTERM (and so does every `sleep` it starts): only SIGKILL stops it.
    let script =
        r#"trap '' TERM; echo $$ > "$PIDFILE"; while :; do echo first >> "$LOG"; sleep 0.01; done"#;
    let first_stderr = dir.path().join("first-stderr");
    let mut first = exec_on(
        &first_urls,
        &["--ttl", "2s", "shared", "--", "sh", "-c"],
        &log,
    )
    .arg(script)
    .env("PIDFILE", &pidfile)
    .stderr(fs::File::create(&first_stderr).unwrap())
    .spawn()
    .unwrap();
    let pid = started_pid(&pidfile);
    let _cleanup = KillOnDrop(vec![pid.clone()]);
    assert!(
        eventually(Duration::from_secs(10), || !lines(&log).is_empty()),
        "the first command never wrote"
    );

    // Healthy nodes, but the first holder can no longer reach any of them.
    for node in 0..3 {
        nodes
            .command(node, &["ACL", "SETUSER", "first", "off"])
            .unwrap();
        nodes
            .command(node, &["CLIENT", "KILL", "USER", "first"])
            .unwrap();
    }
    let mut second = second_holder(&second_urls, &log);

    let second_status = wait_within(&mut second, Duration::from_secs(90));
    assert!(
        second_status.success(),
        "the second holder: {second_status}"
    );
    let first_status = wait_within(&mut first, Duration::from_secs(30));
    let said = fs::read_to_string(&first_stderr).unwrap();
    assert_eq!(first_status.code(), Some(70), "the first holder: {said}");
    assert!(said.contains("at risk"), "{said}");
    assert_first_stopped_before_second(&[pid], &log);
}

#[test]
fn killing_redquorum_with_sigkill_kills_its_command_and_what_it_started_before_the_next_holder() {
    let nodes = cluster(3);
    let urls = nodes.urls().join(",");
    let dir = tempfile::tempdir().unwrap();
    let (log, pidfile, bg_pidfile) = (
        dir.path().join("log"),
        dir.path().join("pid"),
        dir.path().join("bg-pid"),
    );
    // The command starts a writer in the background, then writes itself.
    let script = r#"echo $$ > "$PIDFILE"
(while :; do echo first-background >> "$LOG"; sleep 0.01; done) &
echo $! > "$BG_PIDFILE"
while :; do echo first >> "$LOG"; sleep 0.01; done"#;
    let mut first = exec_on(&urls, &["--ttl", "2s", "shared", "--", "sh", "-c"], &log)
        .arg(script)
        .env("PIDFILE", &pidfile)
        .env("BG_PIDFILE", &bg_pidfile)
        .spawn()
        .unwrap();
    let pids = vec![started_pid(&pidfile), started_pid(&bg_pidfile)];
    let _cleanup = KillOnDrop(pids.clone());
    assert!(
        eventually(Duration::from_secs(10), || {
            let lines = lines(&log);
            lines.iter().any(|l| l == "first") && lines.iter().any(|l| l == "first-background")
        }),
        "the first command and its background writer never both wrote"
    );

    first.kill().expect("SIGKILL redquorum");
    first.wait().expect("reap redquorum");
    let mut second = second_holder(&urls, &log);
    let second_status = wait_within(&mut second, Duration::from_secs(90));
    assert!(
        second_status.success(),
        "the second holder: {second_status}"
    );
    assert_first_stopped_before_second(&pids, &log);
    assert!(fs::read_to_string(&log).is_ok());
}

#[test]
fn what_the_command_leaves_running_is_killed_before_the_lock_is_released() {
    let dir = tempfile::tempdir().unwrap();
    // A shell loop in the background.
    let writer = r#"(while :; do echo first-background >> "$LOG"; sleep 0.01; done) &"#;
    assert_left_behind_dies_before_the_release(dir.path(), writer, &[]);
}

#[test]
fn a_process_whose_main_thread_exited_is_killed_before_the_lock_is_released() {
    let dir = tempfile::tempdir().unwrap();
    let program = build_main_thread_exits(dir.path());
    // A process whose main thread exits at once (a zombie to /proc's eyes)
    // while its second thread appends to the log.
    let writer = r#""$PROGRAM" "$LOG" &"#;
    assert_left_behind_dies_before_the_release(dir.path(), writer, &[("PROGRAM", &program)]);
}

/// The first holder's command starts `writer` in the background (which
/// appends `first...` lines to `$LOG`), waits until it has written, and exits
/// without waiting for it; a second holder waits for the lock. The writer
/// must be dead once the first `exec` has exited (the guard killed and
/// reaped it before the release), and wrote nothing after the second was granted.
fn assert_left_behind_dies_before_the_release(dir: &Path, writer: &str, env: &[(&str, &Path)]) {
    let nodes = cluster(3);
    let urls = nodes.urls().join(",");
    let (log, bg_pidfile) = (dir.join("log"), dir.join("bg-pid"));
    let script = format!(
        r#"{writer}
echo $! > "$BG_PIDFILE"
while [ ! -s "$LOG" ]; do sleep 0.01; done"#
    );
    let mut first = exec_on(&urls, &["--ttl", "2s", "shared", "--", "sh", "-c"], &log);
    first.arg(script).env("BG_PIDFILE", &bg_pidfile);
    for (name, value) in env {
        first.env(name, value);
    }
    let mut first = first.spawn().unwrap();
    let background = started_pid(&bg_pidfile);
    let _cleanup = KillOnDrop(vec![background.clone()]);
    let mut second = second_holder(&urls, &log);

    let first_status = wait_within(&mut first, Duration::from_secs(30));
    assert!(first_status.success(), "the first holder: {first_status}");
    assert!(
        !is_alive(&background),
        "the background writer (pid {background}) outlived the command's exec"
    );
    let second_status = wait_within(&mut second, Duration::from_secs(90));
    assert!(
        second_status.success(),
        "the second holder: {second_status}"
    );
    assert_first_stopped_before_second(&[background], &log);
}

/// A first holder that does not go quietly: its command ignores SIGTERM,
/// writes `first` ticks to the log, and starts a grandchild in a session of
/// its own (`setsid`, so out of the command's process group) that ignores
/// SIGTERM too and writes `first-setsid` ticks.
struct Stubborn {
    /// The `redquorum exec`; killed (and reaped) when dropped if still running.
    exec: Child,
    /// The pid of the guard (the command's parent).
    guard: String,
    /// The command and its `setsid` grandchild.
    pids: Vec<String>,
    stderr: PathBuf,
    _cleanup: KillOnDrop,
}

impl Drop for Stubborn {
    fn drop(&mut self) {
        // A reaped child's pid is never signalled: `kill` on a `Child` checks.
        let _ = self.exec.kill();
        let _ = self.exec.wait();
    }
}

impl Stubborn {
    /// Starts it with `--ttl 2s` on `urls`, and waits until both writers have written.
    fn start(urls: &str, dir: &Path, log: &Path) -> Self {
        let (pidfile, setsid_pidfile, guard_pidfile, stderr) = (
            dir.join("pid"),
            dir.join("setsid-pid"),
            dir.join("guard-pid"),
            dir.join("first-stderr"),
        );
        // The ignored SIGTERM is inherited by everything the command starts.
        let script = r#"trap '' TERM
echo $PPID > "$GUARD_PIDFILE"
setsid sh -c 'echo $$ > "$SETSID_PIDFILE"; while :; do echo first-setsid >> "$LOG"; sleep 0.01; done' &
echo $$ > "$PIDFILE"
while :; do echo first >> "$LOG"; sleep 0.01; done"#;
        let exec = exec_on(urls, &["--ttl", "2s", "shared", "--", "sh", "-c"], log)
            .arg(script)
            .env("PIDFILE", &pidfile)
            .env("SETSID_PIDFILE", &setsid_pidfile)
            .env("GUARD_PIDFILE", &guard_pidfile)
            .stderr(fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let pids = vec![started_pid(&pidfile), started_pid(&setsid_pidfile)];
        let guard = started_pid(&guard_pidfile);
        let stubborn = Self {
            exec,
            guard,
            _cleanup: KillOnDrop(pids.clone()),
            pids,
            stderr,
        };
        assert!(
            eventually(Duration::from_secs(10), || {
                let lines = lines(log);
                lines.iter().any(|l| l == "first") && lines.iter().any(|l| l == "first-setsid")
            }),
            "the first command and its setsid grandchild never both wrote"
        );
        stubborn
    }

    fn exec_pid(&self) -> String {
        self.exec.id().to_string()
    }

    /// What `redquorum exec` printed so far.
    fn said(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

/// Sends `sig` (a name for kill(1): STOP, CONT, KILL) to `pid`.
fn send(sig: &str, pid: &str) {
    let status = Command::new("kill")
        .args([&format!("-{sig}"), pid])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{sig} {pid}: {status}");
}

/// A first holder (a [`Stubborn`] command under `exec`) and the nodes and
/// directory it runs with.
struct Scene {
    _nodes: redquorum_harness::Cluster,
    _dir: tempfile::TempDir,
    first: Stubborn,
}

/// Starts a first holder, lets `strike` hit it, then runs a second `exec`
/// on the same name: the second must run, and nothing of the first may tick
/// after it was granted.
fn second_takes_over(strike: impl FnOnce(&mut Stubborn)) -> Scene {
    let nodes = cluster(3);
    let urls = nodes.urls().join(",");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut first = Stubborn::start(&urls, dir.path(), &log);
    strike(&mut first);
    let mut second = second_holder(&urls, &log);
    let second_status = wait_within(&mut second, Duration::from_secs(90));
    assert!(
        second_status.success(),
        "the second holder: {second_status}"
    );
    assert_first_stopped_before_second(&first.pids, &log);
    Scene {
        _nodes: nodes,
        _dir: dir,
        first,
    }
}

#[test]
fn a_stopped_exec_costs_its_command_the_run_never_the_next_holder_its_lock() {
    // A debugger, a starved or swapped-out process: `exec` cannot extend,
    // cannot signal. The guard must stop the command (and its grandchild)
    // on its own, while `exec` is still stopped.
    let mut scene = second_takes_over(|first| send("STOP", &first.exec_pid()));
    let first = &mut scene.first;
    send("CONT", &first.exec_pid());
    let first_status = wait_within(&mut first.exec, Duration::from_secs(30));
    let said = first.said();
    assert_eq!(first_status.code(), Some(70), "the first holder: {said}");
    // The guard says it stopped the command by itself.
    assert!(said.contains("no renewal of the lease"), "{said}");
}

#[test]
fn a_guard_killed_alone_takes_the_command_with_it_and_the_lock_is_left_to_its_ttl() {
    let mut scene = second_takes_over(|first| send("KILL", &first.guard));
    let first = &mut scene.first;
    let first_status = wait_within(&mut first.exec, Duration::from_secs(30));
    let said = first.said();
    assert_eq!(first_status.code(), Some(70), "the first holder: {said}");
    // It could not prove the tree dead from the guard's status: no release.
    assert!(said.contains("left to expire"), "{said}");
}

#[test]
fn an_exec_killed_with_sigkill_takes_a_term_ignoring_tree_and_its_setsid_grandchild_with_it() {
    second_takes_over(|first| {
        first.exec.kill().expect("SIGKILL redquorum");
        first.exec.wait().expect("reap redquorum");
    });
}
