//! Bad input to `exec` and `status` is a usage error (64) with a message,
//! never a panic or a hang; and `exec` passes its command's arguments
//! through byte for byte, as flock(1) does.

mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::process::Output;

use common::{cluster, redquorum};
use redquorum_harness::Cluster;

/// Runs `redquorum ARGS` on `nodes` and returns its output.
fn run(nodes: &Cluster, args: &[&str]) -> Output {
    redquorum(nodes).args(args).output().expect("run redquorum")
}

/// Asserts a usage error whose message contains `expected`, and no panic.
fn assert_usage_error(output: &Output, expected: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains(expected), "no {expected:?} in: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn durations_that_overflow_are_usage_errors_not_panics() {
    let nodes = cluster(3);
    for option in [
        "--wait",
        "--ttl",
        "--kill-after",
        "--stop-margin",
        "--max-ttl",
    ] {
        let output = run(
            &nodes,
            &["exec", option, "300000000000y", "r", "--", "true"],
        );
        assert_usage_error(&output, option);
        assert_usage_error(&output, "out of range");
    }
    // A hundred years is the most any option takes.
    let output = run(&nodes, &["exec", "--wait", "36501days", "r", "--", "true"]);
    assert_usage_error(&output, "out of range");
    let output = run(&nodes, &["exec", "--ttl", "0s", "r", "--", "true"]);
    assert_usage_error(&output, "greater than zero");
}

#[test]
fn a_kill_or_margin_that_does_not_fit_the_lease_is_a_usage_error() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    // `exec TIMING r -- touch MARKER`
    let exec = |timing: &[&str]| {
        redquorum(&nodes)
            .arg("exec")
            .args(timing)
            .args(["r", "--", "touch"])
            .arg(&marker)
            .output()
            .expect("run redquorum")
    };
    // SIGKILL 2 s after SIGTERM cannot come before a 2 s lease ends.
    let output = exec(&["--ttl", "2s", "--kill-after", "2s"]);
    assert_usage_error(&output, "--kill-after 2s plus 100ms");
    // The stop margin must leave the watchdog room to extend first (at half the ttl).
    let output = exec(&["--ttl", "2s", "--stop-margin", "1s"]);
    assert_usage_error(&output, "below half of --ttl");
    // A ttl too short for the default margin and kill.
    let output = exec(&["--ttl", "500ms"]);
    assert_usage_error(&output, "does not fit");
    assert!(!fs::exists(&marker).unwrap(), "the command ran");
    // The edge that fits: margin 500ms holds a 400ms kill plus the 100ms slack.
    let output = exec(&["--ttl", "2s", "--kill-after", "400ms"]);
    assert!(output.status.success(), "{output:?}");
    assert!(fs::exists(&marker).unwrap());
}

#[test]
fn non_utf8_arguments_reach_the_command_unchanged() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let bytes: &[u8] = b"caf\xe9 \xff\xfe-\x80";
    let status = redquorum(&nodes)
        .args([
            "exec",
            "bytes",
            "--",
            "sh",
            "-c",
            r#"printf %s "$1" > "$OUT""#,
            "sh",
        ])
        .arg(OsStr::from_bytes(bytes))
        .env("OUT", &out)
        .status()
        .unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(fs::read(&out).unwrap(), bytes);
}

#[test]
fn an_empty_resource_or_a_zero_timeout_is_a_usage_error() {
    let nodes = cluster(3);
    assert_usage_error(&run(&nodes, &["status", ""]), "must not be empty");
    assert_usage_error(
        &run(&nodes, &["status", "r", "--timeout", "0s"]),
        "greater than zero",
    );
    assert_usage_error(
        &run(&nodes, &["status", "r", "--timeout", "300000000000y"]),
        "out of range",
    );
    assert_usage_error(
        &run(&nodes, &["exec", "", "--", "true"]),
        "must not be empty",
    );
    // The valid forms still work.
    assert_eq!(
        run(&nodes, &["status", "r", "--timeout", "2s"])
            .status
            .code(),
        Some(0)
    );
}
