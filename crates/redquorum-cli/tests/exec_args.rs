//! Bad input to `exec` and `status` is a usage error (64) with a message,
//! never a panic or a hang (malformed node URLs and an empty entry in the
//! node list too); and `exec` passes its command's arguments through byte
//! for byte, as flock(1) does.

mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
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

/// Asserts a usage error of one line containing each of `expected`.
fn assert_one_line_usage_error(output: &Output, expected: &[&str]) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    for part in expected {
        assert_usage_error(output, part);
    }
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}

/// `exec r -- touch MARKER` on the node list `list`: its output.
fn exec_on(nodes: &Cluster, list: &str, marker: &Path) -> Output {
    redquorum(nodes)
        .env("REDQUORUM_NODES", list)
        .args(["exec", "r", "--", "touch"])
        .arg(marker)
        .output()
        .expect("run redquorum")
}

/// A node URL that does not name one master exactly is refused before any
/// node is contacted, though the two good nodes would make a quorum of 3
/// without it: fred took no port as 6379 and port 0 as given, and dropped an
/// unknown parameter, a cluster URL's path and a fragment.
#[test]
fn a_malformed_node_url_is_a_one_line_usage_error_and_the_command_never_runs() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let urls = nodes.urls();
    let good = urls[1..].join(",");
    let first = urls[0].trim_start_matches("redis://");
    let first_with_password = format!("u:hunter2@{first}");
    for (url, problem) in [
        ("redis-cluster://127.0.0.1".to_owned(), "no port"),
        ("rediss-cluster://127.0.0.1".to_owned(), "no port"),
        ("redis://127.0.0.1".to_owned(), "no port"),
        ("redis-cluster://127.0.0.1:0".to_owned(), "port 0"),
        ("redis://127.0.0.1:0".to_owned(), "port 0"),
        (
            format!("redis-cluster://{first_with_password}?bogus=1"),
            "unknown query parameter \"bogus\"",
        ),
        (
            format!("redis://{first}?bogus=1"),
            "unknown query parameter \"bogus\"",
        ),
        (format!("redis-cluster://{first}/abc"), "path \"/abc\""),
        (
            format!("redis://{first_with_password}/abc"),
            "path \"/abc\"",
        ),
        (format!("redis-cluster://{first}#fragment"), "#fragment"),
        (format!("redis://{first}#fragment"), "#fragment"),
    ] {
        let output = exec_on(&nodes, &format!("{url},{good}"), &marker);
        let node = url.replace("hunter2", "***");
        let node = node.split(['?', '#']).next().unwrap();
        assert_one_line_usage_error(&output, &["invalid node url", node, problem]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("hunter2"), "{stderr}");
        assert!(!marker.exists(), "{url}: the command ran");
    }
    // The URL that names the node exactly: the command runs.
    let output = exec_on(&nodes, &urls.join(","), &marker);
    assert!(output.status.success(), "{output:?}");
    assert!(marker.exists());
}

/// An empty entry in the node list (a trailing comma, `a,,b`) is a usage
/// error naming it, for `--nodes` and `REDQUORUM_NODES`, not dropped.
#[test]
fn an_empty_entry_in_the_node_list_is_a_one_line_usage_error() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let urls = nodes.urls();
    let (a, b, c) = (&urls[0], &urls[1], &urls[2]);
    for (list, entry) in [
        (format!("{a},{b},{c},"), "entry 4 of 4"),
        (format!("{a},,{b},{c}"), "entry 2 of 4"),
        (format!(",{a},{b},{c}"), "entry 1 of 4"),
        (format!("{a},{b}, ,{c}"), "entry 3 of 4"),
    ] {
        let output = exec_on(&nodes, &list, &marker);
        assert_one_line_usage_error(&output, &[entry, "is empty"]);
        assert!(!marker.exists(), "{list}: the command ran");
        let output = redquorum(&nodes)
            .env_remove("REDQUORUM_NODES")
            .args(["status", "r", "--nodes", &list])
            .output()
            .expect("run redquorum");
        assert_one_line_usage_error(&output, &[entry, "is empty"]);
    }
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
