//! `redquorum release --ask` against `redquorum exec --on-ask`, as
//! processes on real nodes: a cooperative command ends on the forwarded
//! signal and the asker sees the lock free; an uncooperative one is
//! stopped after its grace; a holder that does not listen keeps the lock
//! and the asker exits 75; a free resource answers at once.

mod common;

use std::process::{Child, Stdio};
use std::time::Duration;

use common::{cluster, lock_key, redquorum, wait_within};

/// `exec --on-ask SIGNAL --ask-grace GRACE RESOURCE -- sh -c SCRIPT`,
/// started once the lock is taken (its command's first line on stdout).
fn holder(nodes: &redquorum_harness::Cluster, on_ask: &[&str], script: &str) -> Child {
    let mut child = redquorum(nodes)
        .arg("exec")
        .args(on_ask)
        .args(["--ttl", "5s", "asked", "--", "sh", "-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn exec");
    let mut first = String::new();
    let stdout = child.stdout.as_mut().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut first).unwrap();
    assert_eq!(first.trim(), "started", "the command did not start");
    child
}

/// `release --ask asked --wait WAIT`: its exit code and stderr.
fn ask(nodes: &redquorum_harness::Cluster, wait: &str) -> (Option<i32>, String) {
    let out = redquorum(nodes)
        .args(["release", "--ask", "asked", "--wait", wait])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn held(nodes: &redquorum_harness::Cluster) -> usize {
    (0..nodes.len())
        .filter(|&i| {
            nodes
                .command(i, &["EXISTS", &lock_key("asked")])
                .unwrap()
                .as_int()
                == Some(1)
        })
        .count()
}

#[test]
fn a_cooperative_command_ends_on_the_forwarded_signal() {
    let nodes = cluster(3);
    let script =
        r#"trap 'echo "let go" >&2; exit 0' TERM; echo started; while :; do sleep 0.05; done"#;
    let mut exec = holder(&nodes, &["--on-ask", "TERM", "--ask-grace", "20s"], script);
    let (code, stderr) = ask(&nodes, "15s");
    assert_eq!(code, Some(0), "{stderr}");
    let status = wait_within(&mut exec, Duration::from_secs(20));
    let mut exec_stderr = String::new();
    std::io::Read::read_to_string(exec.stderr.as_mut().unwrap(), &mut exec_stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}: {exec_stderr}");
    assert!(exec_stderr.contains("let go"), "{exec_stderr}");
    assert_eq!(held(&nodes), 0);
}

#[test]
fn an_uncooperative_command_is_stopped_after_its_grace() {
    let nodes = cluster(3);
    let script = r#"trap '' TERM; echo started; while :; do sleep 0.05; done"#;
    let mut exec = holder(&nodes, &["--on-ask", "term", "--ask-grace", "1s"], script);
    let (code, stderr) = ask(&nodes, "15s");
    assert_eq!(code, Some(0), "{stderr}");
    let status = wait_within(&mut exec, Duration::from_secs(20));
    assert_eq!(status.code(), Some(70));
    assert_eq!(held(&nodes), 0);
}

#[test]
fn a_holder_that_does_not_listen_keeps_the_lock() {
    let nodes = cluster(3);
    let mut exec = holder(&nodes, &[], r#"echo started; sleep 30"#);
    let (code, stderr) = ask(&nodes, "1s");
    assert_eq!(code, Some(75), "{stderr}");
    assert!(stderr.contains("still held"), "{stderr}");
    // Asking took nothing: held on a quorum still (the third node's write
    // may have come after the grant, or not at all).
    assert!(held(&nodes) >= 2);
    // SIGTERM: exec stops its command and releases.
    let term = std::process::Command::new("kill")
        .args(["-TERM", &exec.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    wait_within(&mut exec, Duration::from_secs(20));
}

#[test]
fn on_ask_takes_only_the_signals_the_guard_forwards() {
    let nodes = cluster(1);
    let out = redquorum(&nodes)
        .args(["exec", "--on-ask", "USR1", "r", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not one of TERM, INT, HUP"));
}

#[test]
fn a_free_resource_is_free_at_once_and_ask_needs_no_force() {
    let nodes = cluster(3);
    let (code, stderr) = ask(&nodes, "0s");
    assert_eq!(code, Some(0), "{stderr}");
    let out = redquorum(&nodes)
        .args(["release", "--ask", "--force", "asked"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64), "--ask and --force together");
}
