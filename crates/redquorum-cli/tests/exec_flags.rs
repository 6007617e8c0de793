//! The operator flags of `exec`: `--max-ttl` (the delayed-restart rule),
//! `--tls-ca` (a private CA for `rediss://` nodes) and `--quiet`.

mod common;

use std::fs;
use std::process::{Command, Output};

use common::{BIN, cluster, redquorum};
use redquorum_harness::{Cluster, Persistence, TlsCluster};

/// `redquorum --nodes URLS ARGS`: its output.
fn run_on(urls: &[String], args: &[&str]) -> Output {
    Command::new(BIN)
        .env_remove("REDQUORUM_NODES")
        .arg("--nodes")
        .arg(urls.join(","))
        .args(args)
        .output()
        .expect("run redquorum")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn max_ttl_keeps_young_volatile_nodes_out_of_the_quorum() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let marker = marker.to_str().unwrap();
    // Up for seconds, no fsync: they may have forgotten keys, so none votes.
    let refused = run_on(
        &nodes.urls(),
        &["exec", "--max-ttl", "600s", "r", "--", "touch", marker],
    );
    assert_eq!(refused.status.code(), Some(69), "{}", stderr(&refused));
    assert!(
        !fs::exists(marker).unwrap(),
        "the command ran without a quorum"
    );
    // The max ttl must cover the ttl.
    let short = run_on(
        &nodes.urls(),
        &["exec", "--ttl", "2s", "--max-ttl", "1s", "r", "--", "true"],
    );
    assert_eq!(short.status.code(), Some(64), "{}", stderr(&short));
    assert!(stderr(&short).contains("max ttl"), "{}", stderr(&short));
    // Without the rule the same nodes vote.
    let plain = run_on(&nodes.urls(), &["exec", "r", "--", "touch", marker]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    assert!(fs::exists(marker).unwrap());
}

#[test]
fn max_ttl_counts_nodes_that_fsync_every_write_at_once() {
    let nodes = Cluster::start_with(3, Persistence::AofAlways).expect("start 3 nodes");
    let output = run_on(
        &nodes.urls(),
        &["exec", "--max-ttl", "600s", "r", "--", "true"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn tls_ca_lets_exec_trust_nodes_signed_by_a_private_ca() {
    let nodes = TlsCluster::start(3).expect("start 3 TLS nodes");
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    fs::write(&ca, nodes.ca_pem()).unwrap();
    let ca = ca.to_str().unwrap();

    let trusted = run_on(
        &nodes.urls(),
        &[
            "exec",
            "--tls-ca",
            ca,
            "tls",
            "--",
            "sh",
            "-c",
            "echo covered",
        ],
    );
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    assert_eq!(String::from_utf8_lossy(&trusted.stdout).trim(), "covered");

    // The system's roots do not know this CA: no node can be reached.
    let untrusted = run_on(&nodes.urls(), &["exec", "tls", "--", "true"]);
    assert_eq!(untrusted.status.code(), Some(69), "{}", stderr(&untrusted));

    let missing = dir.path().join("no-such-ca.pem");
    let unreadable = run_on(
        &nodes.urls(),
        &[
            "exec",
            "--tls-ca",
            missing.to_str().unwrap(),
            "tls",
            "--",
            "true",
        ],
    );
    assert_eq!(
        unreadable.status.code(),
        Some(64),
        "{}",
        stderr(&unreadable)
    );
    assert!(
        stderr(&unreadable).contains("--tls-ca"),
        "{}",
        stderr(&unreadable)
    );
}

#[test]
fn tls_ca_with_plain_nodes_is_a_usage_error() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    fs::write(&ca, redquorum_harness::unrelated_ca_pem().unwrap()).unwrap();
    let output = run_on(
        &nodes.urls(),
        &["exec", "--tls-ca", ca.to_str().unwrap(), "r", "--", "true"],
    );
    assert_eq!(output.status.code(), Some(64), "{}", stderr(&output));
    assert!(stderr(&output).contains("rediss://"), "{}", stderr(&output));
}

#[test]
fn quiet_says_nothing_when_the_lock_is_held_elsewhere_but_still_reports_errors() {
    let nodes = cluster(3);
    for node in 0..3 {
        common::plant_holder(
            &nodes,
            node,
            "busy",
            "someone-else",
            std::time::Duration::from_secs(60),
        );
    }
    let loud = redquorum(&nodes)
        .args(["exec", "busy", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(loud.status.code(), Some(75));
    assert!(!stderr(&loud).is_empty(), "no message without --quiet");

    let quiet = redquorum(&nodes)
        .args(["exec", "--quiet", "busy", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(quiet.status.code(), Some(75));
    assert_eq!(stderr(&quiet), "", "--quiet printed");

    // Errors are still said: a bad command line, a command that cannot run.
    let usage = redquorum(&nodes)
        .args(["exec", "-q", "--ttl", "500ms", "free", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(64));
    assert!(
        stderr(&usage).contains("does not fit"),
        "{}",
        stderr(&usage)
    );
    let missing = redquorum(&nodes)
        .args(["exec", "-q", "free", "--", "no-such-command-here"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(127));
    assert!(
        stderr(&missing).contains("redquorum exec: cannot run"),
        "{}",
        stderr(&missing)
    );
    // The guard signs its messages with the subcommand that started it.
    let missing = redquorum(&nodes)
        .args(["elect", "-q", "free", "--", "no-such-command-here"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(127));
    assert!(
        stderr(&missing).contains("redquorum elect: cannot run"),
        "{}",
        stderr(&missing)
    );
}
