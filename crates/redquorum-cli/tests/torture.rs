//! `redquorum torture` end to end: a short run on local nodes under network
//! faults, its report and its machine-readable last line; a usage error.

use std::process::Command;

fn redquorum() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_redquorum"));
    command.env_remove("REDQUORUM_NODES");
    command
}

#[test]
fn a_short_torture_reports_json_and_ends_with_the_summary_line() {
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
    let lines: Vec<&str> = stdout.lines().collect();
    let last = lines.last().copied().unwrap_or_default();
    let sessions: usize = last
        .strip_prefix("sessions=")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bad last line {last:?}"));
    assert!(sessions > 0, "{last}");
    assert!(last.ends_with(" violations=0 leaked=0"), "{last}");
    let json = lines[lines.len() - 2];
    assert!(
        json.starts_with("{\"elapsed_s\":") && json.ends_with('}'),
        "{json}"
    );
    assert!(json.contains("\"faults\":{\""), "no fault injected: {json}");
    assert!(json.contains("\"violations\":{}"), "{json}");
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
