//! `redquorum torture` end to end: a short run on local nodes under network
//! faults, its JSON report (alone on stdout) and its machine-readable
//! summary line; a usage error.

use std::process::Command;

fn redquorum() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_redquorum"));
    command.env_remove("REDQUORUM_NODES");
    command
}

#[test]
fn a_short_torture_prints_only_json_on_stdout_and_the_summary_line_on_stderr() {
    let out = redquorum()
        .args([
            "torture",
            "--duration",
            "4s",
            "--clients",
            "6",
            "--resources",
            "2",
        ])
        .args(["--ttl", "1s", "--nemesis", "stall,reset,latency", "--json"])
        .output()
        .expect("run redquorum");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "status {:?}\n{stdout}\n{stderr}",
        out.status
    );
    // stdout is one JSON object and nothing else.
    let json: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {stdout}"));
    let sessions = json["sessions"].as_u64().expect("sessions");
    assert!(sessions > 0, "{json}");
    assert!(json["elapsed_s"].as_f64().is_some(), "{json}");
    assert!(
        json["faults"].as_object().is_some_and(|f| !f.is_empty()),
        "no fault injected: {json}"
    );
    assert_eq!(json["violations"], serde_json::json!({}), "{json}");
    assert!(
        json["acquire_latency_ms"]["p99"].as_f64().is_some(),
        "{json}"
    );
    // The machine-readable summary is stderr's last line.
    let last = stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!("sessions={sessions} violations=0 leaked=0"),
        "{stderr}"
    );
    assert!(
        stderr.contains("torture: 4 nodes") || stderr.contains("torture: 5 nodes"),
        "{stderr}"
    );
}

#[test]
fn an_unknown_nemesis_is_a_usage_error() {
    let out = redquorum()
        .args(["torture", "--duration", "1s", "--nemesis", "kill,flood"])
        .output()
        .expect("run redquorum");
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown fault \"flood\""));
}
