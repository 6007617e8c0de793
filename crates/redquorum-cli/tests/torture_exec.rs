//! The default torture's exec group end to end: a short run on real local
//! nodes records sessions that locked through `redquorum exec` (with the
//! owner and fencing tokens of the command's environment), passes, and
//! judges them: an overlap planted
//! beside an exec session in the saved run is found.

mod common;

use common::run;

/// The saved run's sessions of kind `exec` (the JSON lines of `--history`).
fn exec_sessions(history: &str) -> Vec<serde_json::Value> {
    history
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("session").cloned())
        .filter(|s| s["kind"] == "exec")
        .collect()
}

#[test]
fn exec_holders_are_recorded_and_judged_like_any_other_holder() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("run.jsonl");
    let path_text = path.to_str().expect("utf-8 path");
    let (out, stdout, stderr) = run(&[
        "torture",
        "--duration",
        "12s",
        "--ttl",
        "1s",
        "--clients",
        "6",
        "--groups",
        "2",
        "--resources",
        "2",
        "--nemesis",
        "stall,reset,latency",
        "--holders",
        "brief=1",
        // Inspections only, no force-release: a force-release on the
        // resource while the chosen exec holder waited for its grant excuses
        // any overlap with it (the checker's operator rule), so the overlap
        // planted below would be excused whenever one came then.
        "--inspect-every",
        "200ms",
        "--history",
        path_text,
    ]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("exec "),
        "granted per kind names exec: {stdout}"
    );
    let text = std::fs::read_to_string(&path).expect("read history");
    let sessions = exec_sessions(&text);
    let granted: Vec<&serde_json::Value> =
        sessions.iter().filter(|s| !s["grant"].is_null()).collect();
    assert!(!granted.is_empty(), "no exec session was granted: {stdout}");
    for s in &granted {
        // A holder whose token did not come (its write-back met the
        // faults) gives up before the write, as an application must.
        let gave_up = s["outcome"]["kind"] == "abandoned";
        assert!(
            s["owner"].as_str().is_some_and(|o| !o.is_empty()) && (s["fence"].is_u64() || gave_up),
            "an exec grant without its owner and token: {s}"
        );
        // When `exec` exited: its release is due by then (orphan-key rule).
        let used_until = s["release"].as_u64().unwrap_or_default();
        assert!(
            s["ended"].as_u64().is_some_and(|e| e >= used_until),
            "an exec grant without when exec exited: {s}"
        );
    }
    assert!(
        granted.iter().any(|s| s["outcome"]["kind"] == "completed"),
        "no exec holder wrote: {sessions:?}"
    );
    // A refused attempt records when it ended (the `exec` process exited),
    // as every other holder's does: the orphan rule measures a
    // never-granted key's life from there.
    let refused: Vec<&serde_json::Value> =
        sessions.iter().filter(|s| s["grant"].is_null()).collect();
    for s in &refused {
        // Times are recorded in µs.
        let (start, ended) = (s["start"].as_u64(), s["ended"].as_u64());
        assert!(
            ended.is_some() && ended >= start,
            "a refused exec attempt without its end: {s}"
        );
    }
    // Plant a holder granted inside an exec holder's window, with its token:
    // the checker judges exec sessions, so it finds the pair (an overlap, or
    // the token that did not increase) and names the exec one.
    let exec = granted
        .iter()
        .find(|s| s["outcome"]["kind"] == "completed")
        .expect("a completed exec session");
    let mut planted = (*exec).clone();
    planted["owner"] = "planted".into();
    planted["kind"] = "plain".into();
    planted["outcome"] = serde_json::json!({"kind": "abandoned"});
    let line = serde_json::json!({ "session": planted });
    std::fs::write(&path, format!("{text}{line}\n")).expect("write history");
    let (out, found, _) = run(&["torture", "--recheck", path_text]);
    assert_eq!(out.status.code(), Some(1), "{found}");
    assert!(
        (found.contains("[overlap]") || found.contains("[fence]"))
            && found.contains(" exec ")
            && found.contains("owner planted"),
        "{found}"
    );
}
