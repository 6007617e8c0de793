//! The `redquorum` binary, run as a process against real `redis-server` nodes.

mod common;

use std::fs;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::{
    BIN, NodesDownOnDrop, cluster, eventually, free_base_port, is_alive, redquorum, started_pid,
    wait_within,
};
use redquorum_harness::{Cluster, Persistence, RespConn};

#[test]
fn twenty_concurrent_execs_increment_a_shared_counter_exactly_twenty_times() {
    let nodes = cluster(5);
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("counter");
    fs::write(&counter, "0\n").unwrap();
    // Read, pause, write back +1: without mutual exclusion, increments get lost.
    let script = r#"n=$(cat "$COUNTER"); sleep 0.05; echo $((n + 1)) > "$COUNTER""#;
    let mut children: Vec<Child> = (0..20)
        .map(|_| {
            redquorum(&nodes)
                .args([
                    "exec", "--wait", "120s", "--ttl", "5s", "counter", "--", "sh", "-c", script,
                ])
                .env("COUNTER", &counter)
                .spawn()
                .expect("spawn redquorum")
        })
        .collect();
    for child in &mut children {
        let status = wait_within(child, Duration::from_secs(180));
        assert!(status.success(), "an exec failed: {status}");
    }
    assert_eq!(fs::read_to_string(&counter).unwrap().trim(), "20");
}

#[test]
fn exec_passes_the_resource_and_the_child_exit_status_through() {
    let nodes = cluster(3);
    let output = redquorum(&nodes)
        .args([
            "exec",
            "env-check",
            "--",
            "sh",
            "-c",
            r#"echo "res=$REDQUORUM_RESOURCE"; exit 7"#,
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(7), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "res=env-check"
    );
    // Released on exit: nothing left on any node.
    for node in 0..3 {
        let exists = nodes
            .command(node, &["EXISTS", &common::lock_key("env-check")])
            .unwrap()
            .as_int();
        assert_eq!(exists, Some(0));
    }
}

#[test]
fn with_the_lock_held_elsewhere_wait_one_second_exits_75_without_running_the_command() {
    let nodes = cluster(5);
    for node in 0..5 {
        common::plant_holder(
            &nodes,
            node,
            "busy",
            "someone-else",
            Duration::from_secs(60),
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let start = Instant::now();
    let mut exec = redquorum(&nodes)
        .args(["exec", "--wait", "1s", "busy", "--", "touch"])
        .arg(&marker)
        .spawn()
        .unwrap();
    // Killed (and failed) if it has not given up within 20 s of a 1 s wait.
    let status = wait_within(&mut exec, Duration::from_secs(20));
    let took = start.elapsed();
    assert_eq!(status.code(), Some(75));
    assert!(!marker.exists(), "the command ran without the lock");
    assert!(
        took >= Duration::from_secs(1),
        "gave up after {took:?}, before --wait"
    );
}

#[test]
fn exec_exits_69_not_75_when_nodes_are_down_and_nobody_holds_a_majority() {
    let nodes = cluster(5);
    // A stale hold of another owner on one node, two nodes down: 2 of ours,
    // 1 taken, 2 failed. Nobody holds a majority, so this is not contention.
    common::plant_holder(&nodes, 0, "split", "someone-else", Duration::from_secs(60));
    nodes.kill(3).unwrap();
    nodes.kill(4).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let output = redquorum(&nodes)
        .args(["exec", "split", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(69), "{stderr}");
    assert!(!stderr.contains("contended"), "{stderr}");
    assert!(!marker.exists(), "the command ran without the lock");
}

#[test]
fn with_three_of_five_nodes_down_exec_exits_69_without_running_the_command() {
    let nodes = cluster(5);
    for node in 0..3 {
        nodes.kill(node).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let mut exec = redquorum(&nodes)
        .args(["exec", "unavailable", "--", "touch"])
        .arg(&marker)
        .spawn()
        .unwrap();
    // Killed (and failed) if it has not given up within 20 s: no hang.
    let status = wait_within(&mut exec, Duration::from_secs(20));
    assert_eq!(status.code(), Some(69));
    assert!(!marker.exists(), "the command ran without the lock");
}

#[test]
fn killing_a_majority_while_the_command_runs_exits_70_and_terminates_the_command() {
    let nodes = cluster(5);
    let dir = tempfile::tempdir().unwrap();
    let (pidfile, marker) = (dir.path().join("pid"), dir.path().join("terminated"));
    // The command records SIGTERM in a marker file, then exits.
    let script = r#"echo $$ > "$PIDFILE"; trap 'echo term > "$MARKER"; kill $! 2>/dev/null; exit 143' TERM; sleep 60 & wait"#;
    let mut exec = redquorum(&nodes)
        .args(["exec", "--ttl", "1s", "long-job", "--", "sh", "-c", script])
        .env("PIDFILE", &pidfile)
        .env("MARKER", &marker)
        .spawn()
        .unwrap();
    let pid = started_pid(&pidfile);
    for node in 0..3 {
        nodes.kill(node).unwrap();
    }
    let status = wait_within(&mut exec, Duration::from_secs(30));
    assert_eq!(status.code(), Some(70));
    assert_eq!(fs::read_to_string(&marker).unwrap().trim(), "term");
    assert!(!is_alive(&pid), "the command (pid {pid}) is still running");
}

#[test]
fn a_command_ignoring_sigterm_is_killed_after_the_grace_period() {
    let nodes = cluster(5);
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    // `exec` keeps the pid and the ignored SIGTERM: only SIGKILL ends it.
    let script = r#"trap '' TERM; echo $$ > "$PIDFILE"; exec sleep 60"#;
    let mut exec = redquorum(&nodes)
        .args([
            "exec",
            "--ttl",
            "2s",
            "--kill-after",
            "300ms",
            "stubborn",
            "--",
            "sh",
            "-c",
            script,
        ])
        .env("PIDFILE", &pidfile)
        .spawn()
        .unwrap();
    let pid = started_pid(&pidfile);
    for node in 0..3 {
        nodes.kill(node).unwrap();
    }
    let status = wait_within(&mut exec, Duration::from_secs(30));
    assert_eq!(status.code(), Some(70));
    assert!(!is_alive(&pid), "the command (pid {pid}) survived SIGKILL");
}

#[test]
fn status_shows_a_held_lock_and_sigterm_is_forwarded_then_the_lock_released() {
    let nodes = cluster(5);
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let mut exec = redquorum(&nodes)
        .args([
            "exec",
            "--ttl",
            "5s",
            "held",
            "--",
            "sh",
            "-c",
            r#"echo $$ > "$PIDFILE"; exec sleep 60"#,
        ])
        .env("PIDFILE", &pidfile)
        .spawn()
        .unwrap();
    started_pid(&pidfile);

    let json = redquorum(&nodes)
        .args(["status", "held", "--json"])
        .output()
        .unwrap();
    assert!(json.status.success(), "{json:?}");
    let json = String::from_utf8(json.stdout).unwrap();
    let held_on: usize = json
        .split("\"held_on\":")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no held_on in {json}"));
    assert!(held_on >= 3, "held on {held_on} nodes: {json}");
    assert!(json.contains("\"held\":true"), "{json}");

    let table = redquorum(&nodes).args(["status", "held"]).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("HELD: owner"), "{table}");

    // SIGTERM to redquorum reaches the command; the lock is released when it exits.
    let killed = Command::new("kill")
        .args(["-TERM", &exec.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = wait_within(&mut exec, Duration::from_secs(30));
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "the command was not ended by the forwarded SIGTERM"
    );
    let after = redquorum(&nodes)
        .args(["status", "held", "--json"])
        .output()
        .unwrap();
    let after = String::from_utf8(after.stdout).unwrap();
    assert!(after.contains("\"held_on\":0"), "{after}");
}

#[test]
fn status_with_a_majority_down_reports_unreachable_nodes_and_exits_69() {
    let nodes = cluster(5);
    for node in 0..3 {
        nodes.kill(node).unwrap();
    }
    // The live nodes must answer within the timeout even on a loaded machine.
    let (code, json) = status_json(&nodes, &[]);
    assert_eq!(code, Some(69), "{json}");
    assert!(json.contains("\"reachable\":2"), "{json}");
    assert_eq!(json.matches("\"reachable\":false").count(), 3, "{json}");
}

/// A per-node timeout generous enough for the health probes on a loaded machine.
const STATUS_TIMEOUT: &str = "2s";

/// `redquorum status RESOURCE --json [extra..]`: exit code and stdout.
fn status_json(nodes: &Cluster, extra: &[&str]) -> (Option<i32>, String) {
    let output = redquorum(nodes)
        .args(["status", "anything", "--json", "--timeout", STATUS_TIMEOUT])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    (output.status.code(), stdout)
}

/// The `"nodes":[..]` objects of a status JSON, one string each.
fn node_objects(json: &str) -> Vec<String> {
    let nodes = json
        .split("\"nodes\":[")
        .nth(1)
        .unwrap_or_else(|| panic!("no nodes in {json}"));
    nodes.split("},{").map(str::to_owned).collect::<Vec<_>>()
}

#[test]
fn status_reports_role_durability_eviction_and_refuses_young_volatile_nodes() {
    let nodes = cluster(3);
    // Without --max-ttl the delayed-restart rule is off: every master votes.
    let (code, json) = status_json(&nodes, &[]);
    assert_eq!(code, Some(0), "{json}");
    let objects = node_objects(&json);
    assert_eq!(objects.len(), 3, "{json}");
    for node in &objects {
        assert!(node.contains("\"role\":\"master\""), "{node}");
        assert!(node.contains("\"durability\":\"not_durable\""), "{node}");
        assert!(
            node.contains("\"eviction_policy\":\"noeviction\""),
            "{node}"
        );
        assert!(node.contains("\"evicts_lock_keys\":false"), "{node}");
        assert!(node.contains("\"vote\":\"votes\""), "{node}");
    }
    assert!(json.contains("\"max_ttl_ms\":null"), "{json}");
    assert!(json.contains("\"voting\":3"), "{json}");

    // Fresh nodes without fsync may have forgotten keys: refused for 10 minutes.
    let (code, json) = status_json(&nodes, &["--max-ttl", "600s"]);
    assert_eq!(
        code,
        Some(0),
        "refusals do not change the exit status: {json}"
    );
    for node in node_objects(&json) {
        assert!(node.contains("\"vote\":\"refused\""), "{node}");
        assert!(
            node.contains("\"refusal\":\"not durable and up for"),
            "{node}"
        );
    }
    assert!(json.contains("\"voting\":0"), "{json}");
    assert!(json.contains("\"max_ttl_ms\":600000"), "{json}");
    let table = redquorum(&nodes)
        .args([
            "status",
            "anything",
            "--max-ttl",
            "600s",
            "--timeout",
            STATUS_TIMEOUT,
        ])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert_eq!(table.matches("refused: restarted").count(), 3, "{table}");
    assert!(table.contains("max ttl 600s"), "{table}");
    assert!(table.contains("votes count on 0 of 3 nodes"), "{table}");

    // Once the nodes have been up longer than the max ttl, their votes count.
    assert!(
        eventually(Duration::from_secs(30), || {
            let (_, json) = status_json(&nodes, &["--max-ttl", "3s"]);
            json.contains("\"voting\":3")
        }),
        "votes still refused after the max ttl"
    );

    // The max ttl must exceed the per-node timeout.
    let (code, _) = status_json(&nodes, &["--max-ttl", "100ms"]);
    assert_eq!(code, Some(64));
}

#[test]
fn status_counts_the_votes_of_aof_always_nodes_at_once() {
    let nodes = Cluster::start_with(3, Persistence::AofAlways)
        .unwrap_or_else(|e| panic!("cannot start 3 redis nodes: {e}"));
    let (code, json) = status_json(&nodes, &["--max-ttl", "600s"]);
    assert_eq!(code, Some(0), "{json}");
    // Fresh nodes up for seconds: only their fsync lets them vote under a 10-minute max ttl.
    for node in node_objects(&json) {
        assert!(node.contains("\"role\":\"master\""), "{node}");
        assert!(node.contains("\"durability\":\"aof_always\""), "{node}");
        assert!(node.contains("\"vote\":\"votes\""), "{node}");
        assert!(node.contains("\"refusal\":null"), "{node}");
    }
    assert!(json.contains("\"voting\":3"), "{json}");
}

#[test]
fn status_reports_a_down_node_as_unreachable_and_the_others_with_their_health() {
    let nodes = cluster(3);
    nodes.kill(1).unwrap();
    let (code, json) = status_json(&nodes, &["--max-ttl", "600s"]);
    assert_eq!(code, Some(0), "two of three nodes are a quorum: {json}");
    let objects = node_objects(&json);
    assert_eq!(objects.len(), 3, "{json}");
    assert!(objects[1].contains("\"reachable\":false"), "{json}");
    assert!(objects[1].contains("\"vote\":\"unreachable\""), "{json}");
    for up in [&objects[0], &objects[2]] {
        assert!(up.contains("\"role\":\"master\""), "{up}");
        assert!(up.contains("\"vote\":\"refused\""), "{up}");
    }
    let table = redquorum(&nodes)
        .args(["status", "anything", "--timeout", STATUS_TIMEOUT])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert_eq!(table.matches("unreachable").count(), 1, "{table}");
    assert!(table.contains("votes count on 2 of 3 nodes"), "{table}");
}

#[test]
fn usage_errors_exit_64() {
    let no_nodes = Command::new(BIN)
        .env_remove("REDQUORUM_NODES")
        .args(["exec", "r", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(no_nodes.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&no_nodes.stderr).contains("REDQUORUM_NODES"));
    let bad_duration = Command::new(BIN)
        .args([
            "--nodes",
            "redis://127.0.0.1:1",
            "exec",
            "--ttl",
            "soon",
            "r",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(bad_duration.status.code(), Some(64));
    let no_command = Command::new(BIN)
        .args(["--nodes", "redis://127.0.0.1:1", "exec", "r"])
        .output()
        .unwrap();
    assert_eq!(no_command.status.code(), Some(64));
}

/// A build without `--cfg redquorum_mutants` has no `mutants` command: asked
/// for it (or for `torture --mutant`), it is a usage error that says why.
#[cfg(not(redquorum_mutants))]
#[test]
fn a_build_without_planted_bugs_says_so_and_exits_64() {
    for args in [
        &["mutants", "--recipes"][..],
        &["torture", "--mutant", "long-lease"][..],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {stderr}");
        assert!(
            stderr.contains("this build has no planted bugs")
                && stderr.contains("--cfg redquorum_mutants"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn nodes_up_on_base_port_0_is_a_usage_error_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let _cleanup = NodesDownOnDrop(state.clone());
    let mut up = Command::new(BIN)
        .args(["nodes", "up", "-n", "3", "--base-port", "0", "--dir"])
        .arg(&state)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // At once: no node is started and waited for (that took 10 s).
    let status = wait_within(&mut up, Duration::from_secs(5));
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut up.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("--base-port"), "{stderr}");
}

/// A base port with `n` free consecutive ports after it.
fn ping(port: u16) -> bool {
    RespConn::connect(port)
        .and_then(|mut conn| conn.command(&["PING"]))
        .is_ok_and(|reply| reply.as_text().as_deref() == Some("PONG"))
}

#[test]
fn nodes_up_starts_nodes_that_outlive_it_and_nodes_down_stops_them() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let _cleanup = NodesDownOnDrop(state.clone());
    let base = free_base_port(3);
    let up = Command::new(BIN)
        .args(["nodes", "up", "-n", "3", "--base-port", &base.to_string()])
        .arg("--dir")
        .arg(&state)
        .output()
        .unwrap();
    assert!(up.status.success(), "{up:?}");
    let line = String::from_utf8(up.stdout).unwrap();
    let expected: Vec<String> = (base..base + 3)
        .map(|p| format!("redis://127.0.0.1:{p}"))
        .collect();
    assert_eq!(
        line.trim(),
        format!("export REDQUORUM_NODES={}", expected.join(","))
    );
    // The `up` process has exited; its nodes still answer.
    assert!((base..base + 3).all(ping));

    // A lock works on them.
    let mut exec = Command::new(BIN)
        .args(["--nodes", &expected.join(","), "exec", "r", "--", "true"])
        .spawn()
        .unwrap();
    assert!(wait_within(&mut exec, Duration::from_secs(30)).success());

    let down = Command::new(BIN)
        .args(["nodes", "down", "--dir"])
        .arg(&state)
        .output()
        .unwrap();
    assert!(down.status.success(), "{down:?}");
    assert!(
        eventually(Duration::from_secs(10), || (base..base + 3)
            .all(|p| !ping(p))),
        "nodes still answer after down"
    );
    assert!(!state.exists(), "state dir left behind");
}

#[test]
fn nodes_up_without_redis_server_says_how_to_install_it() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .env(
            "REDQUORUM_REDIS_SERVER",
            dir.path().join("no-such-redis-server"),
        )
        .args(["nodes", "up", "--dir"])
        .arg(dir.path().join("state"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(69));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("apt-get install"), "{stderr}");
}

#[test]
fn exec_gives_the_child_a_fencing_token_that_increases_between_runs() {
    let nodes = cluster(3);
    let fence_of_one_run = || {
        let output = redquorum(&nodes)
            .args([
                "exec",
                "fenced",
                "--",
                "sh",
                "-c",
                r#"echo "$REDQUORUM_FENCE""#,
            ])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse::<u64>()
            .unwrap_or_else(|e| panic!("REDQUORUM_FENCE not a number ({e}): {output:?}"))
    };
    let first = fence_of_one_run();
    let second = fence_of_one_run();
    assert!(second > first, "fence went from {first} to {second}");
}

#[test]
fn the_command_starts_with_no_signal_blocked_and_sigpipe_at_its_default() {
    let nodes = cluster(3);
    let output = redquorum(&nodes)
        .args(["exec", "signals", "--", "sh", "-c"])
        .arg("exec grep -E '^Sig(Blk|Ign):' /proc/self/status")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let status = String::from_utf8(output.stdout).unwrap();
    let mask = |name: &str| {
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {status}"));
        u64::from_str_radix(line.trim(), 16).unwrap()
    };
    // The guard blocks the signals it waits for; the command must not inherit that.
    assert_eq!(mask("SigBlk:"), 0, "{status}");
    // Rust ignores SIGPIPE (13); a command expects its default action.
    assert_eq!(mask("SigIgn:") & (1 << (13 - 1)), 0, "{status}");
}
