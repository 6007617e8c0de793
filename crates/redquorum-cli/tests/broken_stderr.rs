//! A closed stderr never makes `redquorum` panic (exit 101): Rust ignores
//! SIGPIPE, so every write to a pipe whose reader has gone fails with EPIPE,
//! and `eprintln!` panics on a failed write. The messages are lost (there is
//! nowhere to write them); the exit status and the command's run are kept.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use common::{cluster, redquorum, wait_within};

/// Runs `command` with stderr a pipe whose read end is already closed, at
/// most 60 s: its status.
fn with_closed_stderr(command: &mut Command) -> ExitStatus {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = command
        .stdout(Stdio::null())
        .stderr(writer)
        .spawn()
        .expect("run redquorum");
    wait_within(&mut child, Duration::from_secs(60))
}

/// `sh -c SCRIPT` that records it ran in `marker` and exits 7.
fn touch_and_exit_7(marker: &Path) -> [String; 3] {
    [
        "sh".to_owned(),
        "-c".to_owned(),
        format!("touch '{}'; exit 7", marker.display()),
    ]
}

#[test]
fn exec_logging_to_a_closed_stderr_runs_the_command_and_keeps_its_status() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    // -v: a log line per acquire, extension and release, all to stderr.
    let status = with_closed_stderr(
        redquorum(&nodes)
            .args(["-v", "exec", "closed-stderr", "--"])
            .args(touch_and_exit_7(&marker)),
    );
    assert_eq!(status.code(), Some(7), "{status}");
    assert!(marker.exists(), "the command did not run");
    // Released: nothing left on any node.
    for node in 0..3 {
        let key = common::lock_key("closed-stderr");
        let exists = nodes.command(node, &["EXISTS", &key]).unwrap().as_int();
        assert_eq!(exists, Some(0), "node {node}");
    }
}

#[test]
fn exec_refused_with_a_closed_stderr_exits_with_its_status_not_101() {
    let nodes = cluster(3);
    for node in 0..3 {
        common::plant_holder(
            &nodes,
            node,
            "busy",
            "someone-else",
            Duration::from_secs(60),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    // Not acquired within --wait: its message goes to the closed stderr.
    let status = with_closed_stderr(
        redquorum(&nodes)
            .args(["exec", "--wait", "200ms", "busy", "--"])
            .args(touch_and_exit_7(&marker)),
    );
    assert_eq!(status.code(), Some(75), "{status}");
    assert!(
        !fs::exists(&marker).unwrap(),
        "the command ran without the lock"
    );
}

#[test]
fn a_usage_error_with_a_closed_stderr_exits_64_not_101() {
    let nodes = cluster(3);
    // Refused by exec itself (the kill does not fit the lease), not by clap.
    let status = with_closed_stderr(redquorum(&nodes).args([
        "exec",
        "--ttl",
        "2s",
        "--kill-after",
        "2s",
        "r",
        "--",
        "true",
    ]));
    assert_eq!(status.code(), Some(64), "{status}");
    // And one that clap reports.
    let status = with_closed_stderr(redquorum(&nodes).args(["exec", "--ttl", "soon", "r"]));
    assert_eq!(status.code(), Some(64), "{status}");
    // And `status` on a node list with an empty entry.
    let list = format!("{},", nodes.urls().join(","));
    let status = with_closed_stderr(
        redquorum(&nodes)
            .env("REDQUORUM_NODES", list)
            .args(["status", "r"]),
    );
    assert_eq!(status.code(), Some(64), "{status}");
}
