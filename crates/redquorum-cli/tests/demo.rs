//! The flash-sale demo as a user runs it: `redquorum demo` on local nodes.

use std::process::{Command, Output};

fn demo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redquorum"))
        .arg("demo")
        .args(args)
        .env_remove("REDQUORUM_NODES")
        .output()
        .expect("the demo binary runs")
}

/// The number after `label` on its summary line, e.g. `oversold: 0`.
fn figure(stdout: &str, label: &str) -> i64 {
    let line = stdout
        .lines()
        .find_map(|line| line.trim().strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{stdout}"));
    line.split_whitespace()
        .next()
        .and_then(|n| n.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in {line:?}"))
}

#[test]
fn the_locked_sale_sells_every_coupon_once_while_a_master_is_killed_and_restarted() {
    let out = demo(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "status {:?}\n{stdout}\n{stderr}",
        out.status
    );
    // Selling out is likely but not a safety property; losing no update is.
    let sold = figure(&stdout, "coupons sold:");
    assert!(sold > 0, "{stdout}");
    assert_eq!(sold + figure(&stdout, "stock left:"), 100, "{stdout}");
    assert_eq!(figure(&stdout, "oversold:"), 0, "{stdout}");
    assert_eq!(
        figure(&stdout, "users with more than one order:"),
        0,
        "{stdout}"
    );
    assert!(figure(&stdout, "lock acquisitions:") > 100, "{stdout}");
    assert!(
        stdout.contains("killed (kill -9) after") && stdout.contains("restarted"),
        "no master was killed and restarted mid-run:\n{stdout}"
    );
}

#[test]
fn without_locks_the_same_sale_oversells_and_exits_non_zero() {
    let out = demo(&["--no-lock"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // 2,000 buyers race a read-modify-write with a 2-7 ms gap on 10 segments:
    // hundreds of overlapping checkouts, so a run without a lost update does not happen.
    assert_eq!(out.status.code(), Some(70), "{stdout}");
    assert!(figure(&stdout, "oversold:") > 0, "{stdout}");
    println!("{stdout}");
}

#[test]
fn bad_sizes_are_a_usage_error() {
    let out = demo(&["--buyers", "0"]);
    assert_eq!(out.status.code(), Some(64));
}

#[test]
fn on_cluster_masters_the_sale_sells_every_coupon_once_while_a_shard_primary_is_killed() {
    let out = demo(&["--cluster", "2", "-n", "3"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "status {:?}\n{stdout}\n{stderr}",
        out.status
    );
    let sold = figure(&stdout, "coupons sold:");
    assert!(sold > 0, "{stdout}");
    assert_eq!(sold + figure(&stdout, "stock left:"), 100, "{stdout}");
    assert_eq!(figure(&stdout, "oversold:"), 0, "{stdout}");
    assert_eq!(
        figure(&stdout, "users with more than one order:"),
        0,
        "{stdout}"
    );
    assert!(
        stdout.contains("(its first shard's primary) killed (kill -9) after"),
        "no shard primary was killed mid-run:\n{stdout}"
    );
}

#[test]
fn a_bad_cluster_size_or_a_cluster_with_given_nodes_is_a_usage_error() {
    for args in [&["--cluster", "0"][..], &["--cluster", "17"]] {
        let out = demo(args);
        assert_eq!(out.status.code(), Some(64), "{args:?}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_redquorum"))
        .args(["demo", "--cluster", "2", "--nodes", "redis://127.0.0.1:1"])
        .output()
        .expect("the demo binary runs");
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("redis-cluster://"));
}
