//! The global `-q`/`-v` flags on real nodes, one of which may evict lock
//! keys: the library's warning reaches stderr by default and with `-v`,
//! never with `-q`; `-v` adds a line per acquire, extension and release,
//! `-vv` each node's probe and each acquire's per-node outcomes; stdout
//! carries only the command's output (`status --json` stays one JSON object).

mod common;

use common::{cluster, redquorum};

const WARNING: &str = "maxmemory-policy may evict lock keys";

/// `redquorum BEFORE status --json r AFTER`: (stdout, stderr).
fn status(nodes: &redquorum_harness::Cluster, before: &[&str], after: &[&str]) -> (String, String) {
    let output = redquorum(nodes)
        .args(before)
        .args(["status", "--json", "r"])
        .args(after)
        .output()
        .expect("redquorum runs");
    assert!(output.status.success(), "{output:?}");
    (
        String::from_utf8(output.stdout).expect("UTF-8"),
        String::from_utf8(output.stderr).expect("UTF-8"),
    )
}

#[test]
fn q_silences_the_librarys_warnings_and_v_adds_detail() {
    let nodes = cluster(3);
    nodes
        .command(1, &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"])
        .unwrap();
    let evicting = nodes.host_port(1);
    // The flags are global: accepted after the subcommand too.
    let cases: [(&[&str], &[&str]); 6] = [
        (&[], &[]),
        (&["-v"], &[]),
        (&["-q"], &[]),
        (&[], &["-q"]),
        (&["-vv"], &[]),
        (&[], &["-vv"]),
    ];
    for (before, after) in cases {
        let flags = [before, after].concat();
        let (stdout, stderr) = status(&nodes, before, after);
        serde_json::from_str::<serde_json::Value>(&stdout)
            .unwrap_or_else(|e| panic!("{flags:?}: stdout is not JSON ({e}): {stdout}"));
        let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains(WARNING)).collect();
        if flags.contains(&"-q") {
            assert!(stderr.is_empty(), "{flags:?}: {stderr}");
        } else {
            assert_eq!(warnings.len(), 1, "{flags:?}: {stderr}");
            assert!(warnings[0].contains(&evicting), "{stderr}");
        }
        let debug = stderr.contains("node probed");
        assert_eq!(debug, flags.contains(&"-vv"), "{flags:?}: {stderr}");
    }
}

#[test]
fn q_and_v_together_are_a_usage_error() {
    let nodes = cluster(1);
    let output = redquorum(&nodes)
        .args(["-q", "-v", "status", "r"])
        .output()
        .expect("redquorum runs");
    assert_eq!(output.status.code(), Some(64), "{output:?}");
}

#[test]
fn v_shows_one_line_per_acquire_extend_and_release() {
    let nodes = cluster(3);
    let exec = |flags: &[&str]| {
        let output = redquorum(&nodes)
            .args(flags)
            .args(["exec", "--ttl", "2s", "r", "--", "true"])
            .output()
            .expect("redquorum runs");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stderr).expect("UTF-8")
    };
    let quiet = exec(&[]);
    assert!(!quiet.contains("redquorum.acquire"), "{quiet}");
    let verbose = exec(&["-v"]);
    let acquires: Vec<&str> = verbose
        .lines()
        .filter(|l| l.contains("redquorum.acquire{") && l.contains("result=\"acquired\""))
        .collect();
    assert_eq!(acquires.len(), 1, "{verbose}");
    assert!(
        verbose
            .lines()
            .any(|l| l.contains("redquorum.release{") && l.contains("result=\"released\"")),
        "{verbose}"
    );
    // Per-node outcomes are debug detail (-vv), not -v's.
    assert!(!verbose.contains("node outcomes"), "{verbose}");
}
