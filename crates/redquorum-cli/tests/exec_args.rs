//! Bad input to `exec` is a usage error (64) with a message, never a panic
//! or a hang.

mod common;

use std::fs;
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
fn a_kill_or_margin_that_does_not_fit_the_lease_is_a_usage_error() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let marker = marker.to_str().unwrap();
    // SIGKILL 2 s after SIGTERM cannot come before a 2 s lease ends.
    let output = run(
        &nodes,
        &[
            "exec",
            "--ttl",
            "2s",
            "--kill-after",
            "2s",
            "r",
            "--",
            "touch",
            marker,
        ],
    );
    assert_usage_error(&output, "--kill-after 2s plus 100ms");
    // The stop margin must leave the watchdog room to extend first (at half the ttl).
    let output = run(
        &nodes,
        &[
            "exec",
            "--ttl",
            "2s",
            "--stop-margin",
            "1s",
            "r",
            "--",
            "touch",
            marker,
        ],
    );
    assert_usage_error(&output, "below half of --ttl");
    // A ttl too short for the default margin and kill.
    let output = run(
        &nodes,
        &["exec", "--ttl", "500ms", "r", "--", "touch", marker],
    );
    assert_usage_error(&output, "does not fit");
    assert!(!fs::exists(marker).unwrap(), "the command ran");
    // The edge that fits: margin 500ms holds a 400ms kill plus the 100ms slack.
    let output = run(
        &nodes,
        &[
            "exec",
            "--ttl",
            "2s",
            "--kill-after",
            "400ms",
            "r",
            "--",
            "touch",
            marker,
        ],
    );
    assert!(output.status.success(), "{output:?}");
    assert!(fs::exists(marker).unwrap());
}
