//! `redquorum exec` never lets its command overlap the next holder: not when
//! the holder is cut off from the nodes (the command is stopped a margin
//! before the lease ends), and not when `redquorum` itself is killed (the
//! guard kills the command and everything it started).
//!
//! Each test has a first holder whose command keeps appending `first` lines to
//! a log, and a second `exec --wait` whose command appends `second` when it is
//! granted the lock. Once every process of the first is gone, the log is the
//! whole story: no `first` line may follow a `second` line.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

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
    let nodes = cluster(3);
    let urls = nodes.urls().join(",");
    let dir = tempfile::tempdir().unwrap();
    let (log, bg_pidfile) = (dir.path().join("log"), dir.path().join("bg-pid"));
    // The command starts a writer in the background, waits until it has
    // written, and exits without waiting for it.
    let script = r#"(while :; do echo first-background >> "$LOG"; sleep 0.01; done) &
echo $! > "$BG_PIDFILE"
while [ ! -s "$LOG" ]; do sleep 0.01; done"#;
    let mut first = exec_on(&urls, &["--ttl", "2s", "shared", "--", "sh", "-c"], &log)
        .arg(script)
        .env("BG_PIDFILE", &bg_pidfile)
        .spawn()
        .unwrap();
    let background = started_pid(&bg_pidfile);
    let _cleanup = KillOnDrop(vec![background.clone()]);
    let mut second = second_holder(&urls, &log);

    let first_status = wait_within(&mut first, Duration::from_secs(30));
    assert!(first_status.success(), "the first holder: {first_status}");
    // Killed and reaped by the guard before `exec` released the lock and exited.
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
