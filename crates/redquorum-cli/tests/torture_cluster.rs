//! `redquorum torture --cluster S` end to end: the masters are local Redis
//! Clusters, the nemesis migrates the resources' slots and fails their
//! shards over (clean and lagging), and a short run passes with every one
//! of those faults in its log; the options that shape single servers, and
//! the faults that address one, are usage errors with it (and the cluster
//! faults without it).

mod common;

use common::{passed_report, run};

/// 3 masters of 2 shards (+1 replica each), 15 s, a 1 s TTL, 8 clients on
/// 2 resources; a quarter of the holders pause (few grants: a lagging
/// failover keeps a shard's names from a majority for the longest lease).
/// The run's history is kept (printed on failure) until the test passes:
/// a finding of this random-seed run can then be rechecked and read.
#[test]
fn a_short_run_on_cluster_masters_migrates_fails_over_and_passes() {
    let history = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("torture_cluster-{}.jsonl", std::process::id()));
    let history = history.to_str().expect("a UTF-8 temp path");
    // Printed, shown only if the test fails.
    println!("history: {history}");
    let ran = run(&[
        "torture",
        "--history",
        history,
        "--cluster",
        "2",
        "-n",
        "3",
        "--duration",
        "15s",
        "--ttl",
        "1s",
        "--clients",
        "8",
        "--resources",
        "2",
        "--holders",
        "brief=6,to-deadline=2,extending=1,paused=3",
        "--json",
    ]);
    let json = passed_report(&ran);
    let stderr = &ran.2;
    assert_eq!(json["violations"], serde_json::json!({}), "{json}");
    assert_eq!(json["vacuous"], serde_json::json!([]), "{json}");
    for kind in ["migrate", "failover", "lagging-failover"] {
        assert!(
            json["faults"][kind].as_u64().is_some_and(|n| n > 0),
            "no {kind} in the fault log: {json}"
        );
    }
    assert!(
        stderr.contains("3 cluster masters of 2 shards"),
        "the banner says what ran: {stderr}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.ends_with(" violations=0 leaked=0"), "{last}");
    std::fs::remove_file(history).expect("the history was written");
}

#[test]
fn cluster_usage_errors_exit_64_before_any_node_starts() {
    let refused: [(&[&str], &str); 6] = [
        (&["--cluster", "0"], "1 to 16 shards"),
        (&["--cluster", "17"], "1 to 16 shards"),
        (&["--cluster", "2", "--nemesis", "migrate,kill"], "kill"),
        (&["--cluster", "1", "--nemesis", "migrate"], "--cluster 2"),
        (&["--cluster", "2", "--fast-node", "3"], "--fast-node"),
        (&["--nemesis", "lagging-failover"], "needs --cluster"),
    ];
    for (args, says) in refused {
        let mut all = vec!["torture", "--duration", "1s"];
        all.extend_from_slice(args);
        let (out, stdout, stderr) = run(&all);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {stdout}\n{stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: no run, no report: {stdout}");
    }
    let (out, _, stderr) = run(&[
        "--nodes",
        "redis://127.0.0.1:1",
        "torture",
        "--cluster",
        "2",
        "--duration",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("--nodes"), "{stderr}");
}
