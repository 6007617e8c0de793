//! `redquorum bench` against real nodes: one JSON object per workload with
//! the documented fields, and exit 69 when the nodes cannot grant a lock.

use std::process::Command;

use redquorum_harness::Cluster;

/// The number after `"field":` in a one-line JSON object.
fn field(json: &str, name: &str) -> Option<f64> {
    let start = json.find(&format!("\"{name}\":"))? + name.len() + 3;
    let rest = &json[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn bench(nodes: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_redquorum"))
        .args([
            "--nodes",
            nodes,
            "bench",
            "--duration",
            "300ms",
            "--tasks",
            "4",
            "--json",
        ])
        .args(args)
        .output()
        .expect("run redquorum")
}

#[test]
fn bench_prints_the_documented_fields_for_every_workload() {
    let cluster = Cluster::start(3).expect("3 local nodes");
    let nodes = cluster.urls().join(",");
    for workload in ["sequential", "parallel", "contended", "pingpong"] {
        let out = bench(&nodes, &["--workload", workload]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{workload}: {out:?}");
        let json = stdout.trim();
        assert_eq!(
            json.lines().count(),
            1,
            "{workload}: one JSON object: {json}"
        );
        for name in [
            "cycles_per_sec",
            "acquire_p50_us",
            "acquire_p99_us",
            "release_p50_us",
            "release_p99_us",
            "client_cpu_us_per_cycle",
        ] {
            assert!(
                field(json, name).is_some(),
                "{workload}: {name} missing in {json}"
            );
        }
        assert!(
            field(json, "cycles").unwrap_or(0.0) >= 1.0,
            "{workload}: {json}"
        );
        assert_eq!(field(json, "errors"), Some(0.0), "{workload}: {json}");
        let handoff = field(json, "handoff_p50_us");
        if matches!(workload, "contended" | "pingpong") {
            assert!(
                handoff.is_some(),
                "{workload}: handoff_p50_us missing in {json}"
            );
            // Every worker's critical sections are counted: the least and
            // the most any one got lie around their mean.
            let json: serde_json::Value = serde_json::from_str(json).unwrap();
            let fairness = &json["fairness"];
            let (min, max, mean) = (
                fairness["min"].as_f64().unwrap(),
                fairness["max"].as_f64().unwrap(),
                fairness["mean"].as_f64().unwrap(),
            );
            assert!(min <= mean && mean <= max, "{workload}: {fairness}");
            let workers = fairness["clients"].as_f64().unwrap();
            let cycles = json["cycles"].as_f64().unwrap();
            assert!((mean * workers - cycles).abs() < 1e-6, "{workload}: {json}");
        } else {
            assert!(!json.contains("handoff_p50_us"), "{workload}: {json}");
            assert!(!json.contains("fairness"), "{workload}: {json}");
        }
    }
}

#[test]
fn bench_on_nodes_that_are_down_exits_unavailable() {
    let cluster = Cluster::start(3).expect("3 local nodes");
    let nodes = cluster.urls().join(",");
    for i in 0..3 {
        cluster.kill(i).expect("kill");
    }
    let out = bench(&nodes, &["--workload", "sequential"]);
    assert_eq!(out.status.code(), Some(69), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("do not grant a lock"));
}

#[test]
fn bench_down_runs_all_up_then_with_a_killed_node_and_prints_both() {
    for how in ["kill", "stop"] {
        let out = Command::new(env!("CARGO_BIN_EXE_redquorum"))
            .args(["bench", "--duration", "300ms", "--json", "--down", "1"])
            .args(["--down-how", how])
            .env_remove("REDQUORUM_NODES")
            .output()
            .expect("run redquorum");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{how}: {out:?}");
        assert!(stdout.contains("\"all_up\":{"), "{how}: {stdout}");
        assert!(stdout.contains("\"with_nodes_down\":{"), "{how}: {stdout}");
        assert!(stdout.contains("\"down\":\"1 of 5"), "{how}: {stdout}");
        let ratio = field(&stdout, "cycles_per_sec_ratio").expect("a ratio");
        assert!(ratio > 0.0, "{how}: {stdout}");
    }
}

#[test]
fn bench_down_refuses_a_majority_and_given_nodes() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_redquorum"))
            .arg("bench")
            .args(args)
            .env_remove("REDQUORUM_NODES")
            .output()
            .expect("run redquorum")
    };
    let majority = run(&["--down", "3"]);
    assert_eq!(majority.status.code(), Some(64), "{majority:?}");
    assert!(String::from_utf8_lossy(&majority.stderr).contains("a minority"));
    let given = run(&["--down", "1", "--nodes", "redis://127.0.0.1:1"]);
    assert_eq!(given.status.code(), Some(64), "{given:?}");
}

#[test]
fn bench_serve_runs_the_library_then_through_the_service_and_prints_each() {
    let cluster = Cluster::start(3).expect("3 local nodes");
    let nodes = cluster.urls().join(",");
    for workload in ["sequential", "parallel"] {
        let out = bench(&nodes, &["--workload", workload, "--serve"]);
        assert!(out.status.success(), "{workload}: {out:?}");
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("one JSON object");
        for run in ["library", "library_token_every_grant", "through_serve"] {
            let sample = &report[run];
            assert!(
                sample["cycles"].as_u64() > Some(0),
                "{workload} {run}: {report}"
            );
            assert_eq!(sample["errors"], 0, "{workload} {run}: {report}");
        }
        // Every lock the service hands out carries its token, as the
        // library's second run asks for.
        let ratio = report["through_serve_cycles_per_sec_ratio"].as_f64();
        assert!(ratio.is_some_and(|r| r > 0.0), "{report}");
    }
    let out = bench(&nodes, &["--serve", "--down", "1"]);
    assert_eq!(out.status.code(), Some(64), "{out:?}");
}
