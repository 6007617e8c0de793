//! The commands for the primitives beyond the lock, run as processes against
//! real `redis-server` nodes: `exec -n K` (a semaphore permit), `elect` and
//! `leader` (leader election), `release --force` and `list`.
//!
//! Commands record what they do in a log, each line appended under
//! `flock(1)`, so the log's order is the order the events happened in; the
//! assertions are on that record, never on how long something took.

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{KillOnDrop, cluster, eventually, lines, redquorum, wait_within};
use redquorum_harness::Cluster;

/// Shell function `rec LINE`: appends LINE to `$LOG` under an exclusive
/// `flock` on `$LOG.lock`.
const REC: &str =
    r#"rec() { flock "$LOG.lock" sh -c 'printf "%s\n" "$1" >> "$2"' rec "$1" "$LOG"; }"#;

/// Output of `redquorum ARGS` on `nodes`, bounded: fails past 30 s.
fn run(nodes: &Cluster, args: &[&str]) -> Output {
    let child = redquorum(nodes)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn redquorum");
    output_within(child, Duration::from_secs(30))
}

/// Waits for `child` (stdout and stderr piped) at most `within`.
fn output_within(mut child: Child, within: Duration) -> Output {
    // Read the pipes on threads so a chatty child cannot block on them.
    let stdout = child.stdout.take().map(read_all);
    let stderr = child.stderr.take().map(read_all);
    let status = wait_within(&mut child, within);
    let collect = |reader: Option<std::thread::JoinHandle<Vec<u8>>>| {
        reader.map(|r| r.join().unwrap()).unwrap_or_default()
    };
    Output {
        status,
        stdout: collect(stdout),
        stderr: collect(stderr),
    }
}

fn read_all(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The lines of `log` whose first word is `event`, as their words.
fn events<'a>(log: &'a [String], event: &str) -> Vec<Vec<&'a str>> {
    log.iter()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|words| words.first() == Some(&event))
        .collect()
}

#[test]
fn exec_with_two_permits_runs_at_most_two_of_four_commands_at_once() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    // Each command records its start, waits (at most 20 s) until two have
    // started, so two really run together, then holds a while and records
    // its end. A third admitted too early would start inside that window.
    let script = format!(
        r#"{REC}
rec "start $$ $REDQUORUM_SLOT $REDQUORUM_RESOURCE"
i=0
while [ "$(grep -c '^start' "$LOG")" -lt 2 ] && [ $i -lt 1000 ]; do sleep 0.02; i=$((i + 1)); done
sleep 0.3
rec "end $$ $REDQUORUM_SLOT""#
    );
    let mut children: Vec<Child> = (0..4)
        .map(|_| {
            redquorum(&nodes)
                .args(["exec", "-n", "2", "--wait", "60s", "--ttl", "5s", "pool"])
                .args(["--", "sh", "-c", &script])
                .env("LOG", &log)
                .spawn()
                .expect("spawn redquorum")
        })
        .collect();
    let _reap = KillOnDrop(children.iter().map(|c| c.id().to_string()).collect());
    for child in &mut children {
        let status = wait_within(child, Duration::from_secs(90));
        assert!(status.success(), "an exec -n 2 failed: {status}");
    }
    let log = lines(&log);
    assert_eq!(events(&log, "start").len(), 4, "{log:#?}");
    assert_eq!(events(&log, "end").len(), 4, "{log:#?}");
    // Replay the record: who ran, on which slot, at each point.
    let mut running: Vec<(&str, &str)> = Vec::new();
    let mut most = 0;
    for line in &log {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["start", pid, slot, resource] => {
                assert_eq!(*resource, "pool", "REDQUORUM_RESOURCE: {line}");
                assert!(
                    ["0", "1"].contains(slot),
                    "REDQUORUM_SLOT of 2 permits: {line}"
                );
                assert!(
                    running.iter().all(|(_, other)| other != slot),
                    "two commands on slot {slot} at once: {log:#?}"
                );
                running.push((pid, slot));
                most = most.max(running.len());
                assert!(running.len() <= 2, "more than 2 at once: {log:#?}");
            }
            ["end", pid, _] => running.retain(|(other, _)| other != pid),
            _ => panic!("unexpected log line {line:?}"),
        }
    }
    assert_eq!(
        most, 2,
        "two permits never ran two commands together: {log:#?}"
    );
}

#[test]
fn zero_permits_is_a_usage_error_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    for args in [["-n", "0"], ["--permits", "0"], ["-n", "two"]] {
        // No node is contacted: the value is refused while parsing.
        let output = std::process::Command::new(common::BIN)
            .args(["--nodes", "redis://127.0.0.1:1", "exec"])
            .args(args)
            .args(["pool", "--", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(64), "{args:?}: {output:?}");
        assert!(text(&output.stderr).contains("--permits"), "{output:?}");
        assert!(!marker.exists(), "the command ran with {args:?}");
    }
}

#[test]
fn two_elects_lead_one_at_a_time_the_second_after_the_first_with_a_higher_epoch() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let (log, go) = (dir.path().join("log"), dir.path().join("go"));
    let seen_b = dir.path().join("seen-b");
    let mut reap = KillOnDrop::default();

    // A watcher, from before anyone leads: each change, one JSON line.
    let mut watcher = redquorum(&nodes)
        .args(["leader", "--watch", "--json", "--ttl", "2s", "jobs"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    reap.0.push(watcher.id().to_string());
    let (tx, seen) = mpsc::channel();
    let watched = BufReader::new(watcher.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in watched.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });

    // A leads until the test creates `go` (at most 30 s).
    let first = format!(
        r#"{REC}
rec "start A $REDQUORUM_FENCE $REDQUORUM_RESOURCE"
i=0
while [ ! -e "$GO" ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i + 1)); done
rec "end A""#
    );
    // B leads until the watcher has shown it (a leadership shorter than a
    // read of the nodes can pass unseen: observe reports states, not events).
    let second = format!(
        r#"{REC}
rec "start B $REDQUORUM_FENCE"
i=0
while [ ! -e "$SEEN_B" ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i + 1)); done
rec "end B""#
    );
    let elect = |value: &str, script: &str| {
        redquorum(&nodes)
            .args(["elect", "--ttl", "2s", "--value", value, "jobs"])
            .args(["--", "sh", "-c", script])
            .env("LOG", &log)
            .env("GO", &go)
            .env("SEEN_B", &seen_b)
            .spawn()
            .unwrap()
    };
    let mut a = elect("A", &first);
    reap.0.push(a.id().to_string());
    let a_led = eventually(Duration::from_secs(20), || {
        !events(&lines(&log), "start").is_empty() || matches!(a.try_wait(), Ok(Some(_)))
    });
    assert!(
        a_led && events(&lines(&log), "start").len() == 1,
        "A never became leader (elect: {:?})",
        a.try_wait()
    );

    // `leader` names A, with the pid of A's elect.
    let shown = run(&nodes, &["leader", "--json", "jobs"]);
    assert_eq!(shown.status.code(), Some(0), "{shown:?}");
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["name"], "jobs");
    assert_eq!(shown["leader"]["value"], "A", "{shown}");
    assert_eq!(shown["leader"]["pid"], a.id(), "{shown}");
    // And A's epoch: the fencing token A's command was given.
    let a_epoch = events(&lines(&log), "start")[0][2].to_owned();
    assert_eq!(shown["leader"]["epoch"].to_string(), a_epoch, "{shown}");

    // B campaigns while A leads: it must not run.
    let mut b = elect("B", &second);
    reap.0.push(b.id().to_string());
    assert!(
        !eventually(Duration::from_secs(2), || events(&lines(&log), "start")
            .len()
            > 1),
        "B ran while A led: {:#?}",
        lines(&log)
    );
    fs::write(&go, "").unwrap();
    assert_eq!(wait_within(&mut a, Duration::from_secs(30)).code(), Some(0));

    // The watcher sees A lead, then B (elected once A resigned).
    let mut values = Vec::new();
    while !values.contains(&"B".to_owned()) {
        let line = seen
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("the watcher never showed B; it showed {values:?}"));
        let change: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(change["name"], "jobs", "{line}");
        let value = change["leader"]["value"].as_str().unwrap_or("none");
        values.push(value.to_owned());
    }
    let position = |v: &str| values.iter().position(|seen| seen == v);
    assert!(
        matches!((position("A"), position("B")), (Some(a), Some(b)) if a < b),
        "the watcher did not show A, then B: {values:?}"
    );
    fs::write(&seen_b, "").unwrap();
    assert_eq!(wait_within(&mut b, Duration::from_secs(30)).code(), Some(0));
    let _ = watcher.kill();
    let _ = watcher.wait();

    let log = lines(&log);
    let order: Vec<String> = log
        .iter()
        .map(|line| {
            line.split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(order, ["start A", "end A", "start B", "end B"], "{log:#?}");
    let epoch = |who: &str| -> u64 {
        let starts = events(&log, "start");
        let words = starts.iter().find(|w| w[1] == who).unwrap();
        words[2]
            .parse()
            .unwrap_or_else(|e| panic!("REDQUORUM_FENCE of {who} not a number ({e}): {log:#?}"))
    };
    assert!(epoch("B") > epoch("A"), "epochs did not increase: {log:#?}");
    assert_eq!(events(&log, "start")[0][3], "jobs", "REDQUORUM_RESOURCE");

    // Nobody leads now: exit 1.
    let after = run(&nodes, &["leader", "jobs"]);
    assert_eq!(after.status.code(), Some(1), "{after:?}");
    assert_eq!(text(&after.stdout).trim(), "no leader");
}

#[test]
fn elect_with_a_zero_wait_makes_one_attempt_and_exits_75_while_another_leads() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let (started, go, marker) = (
        dir.path().join("started"),
        dir.path().join("go"),
        dir.path().join("ran"),
    );
    let script = r#"touch "$STARTED"; i=0; while [ ! -e "$GO" ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i + 1)); done"#;
    let mut leader = redquorum(&nodes)
        .args([
            "elect", "--value", "first", "jobs", "--", "sh", "-c", script,
        ])
        .env("STARTED", &started)
        .env("GO", &go)
        .spawn()
        .unwrap();
    let _reap = KillOnDrop(vec![leader.id().to_string()]);
    assert!(eventually(Duration::from_secs(20), || started.exists()));
    for wait in ["0s", "1s"] {
        let output = std::process::Command::new(common::BIN)
            .env("REDQUORUM_NODES", nodes.urls().join(","))
            .args(["elect", "--wait", wait, "jobs", "--", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(75), "--wait {wait}: {output:?}");
        assert!(!marker.exists(), "a second leader ran with --wait {wait}");
        if wait == "1s" {
            assert!(
                text(&output.stderr).contains(r#""first" leads"#),
                "{output:?}"
            );
        }
    }
    fs::write(&go, "").unwrap();
    assert_eq!(
        wait_within(&mut leader, Duration::from_secs(30)).code(),
        Some(0)
    );
}

#[test]
fn release_force_frees_a_held_resource_and_fences_off_the_ousted_holder() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let first_fence = dir.path().join("fence");
    // The holder keeps its lock (extended every second) until it is ousted.
    let mut holder = redquorum(&nodes)
        .args(["exec", "--ttl", "2s", "stuck", "--", "sh", "-c"])
        .arg(r#"echo "$REDQUORUM_FENCE" > "$FENCE.tmp"; mv "$FENCE.tmp" "$FENCE"; exec sleep 60"#)
        .env("FENCE", &first_fence)
        .spawn()
        .unwrap();
    let _reap = KillOnDrop(vec![holder.id().to_string()]);
    assert!(eventually(Duration::from_secs(20), || first_fence.exists()));
    let first: u64 = fs::read_to_string(&first_fence)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let try_exec = || {
        run(
            &nodes,
            &["exec", "stuck", "--", "sh", "-c", "echo $REDQUORUM_FENCE"],
        )
    };
    assert_eq!(try_exec().status.code(), Some(75), "the lock is held");

    // Without --force: refused, says what it would do, and nothing changes.
    let refused = run(&nodes, &["release", "stuck"]);
    assert_eq!(refused.status.code(), Some(64), "{refused:?}");
    let message = text(&refused.stderr);
    assert!(message.contains("--force"), "{message}");
    assert!(message.contains("fence"), "{message}");
    assert!(refused.stdout.is_empty(), "{refused:?}");
    assert_eq!(
        try_exec().status.code(),
        Some(75),
        "released without --force"
    );

    let forced = run(&nodes, &["release", "--force", "stuck"]);
    assert_eq!(forced.status.code(), Some(0), "{forced:?}");
    let raised: u64 = text(&forced.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("stdout is not the fence token ({e}): {forced:?}"));
    assert!(
        raised > first,
        "fence {raised} not above the holder's {first}"
    );

    // Another exec gets in at once (one attempt), with a token above both.
    let next = try_exec();
    assert_eq!(next.status.code(), Some(0), "{next:?}");
    let next: u64 = text(&next.stdout).trim().parse().unwrap();
    assert!(next > raised, "fence {next} not above the forced {raised}");

    // The ousted holder learns at its next extension: its command is
    // stopped and it exits 70.
    assert_eq!(
        wait_within(&mut holder, Duration::from_secs(20)).code(),
        Some(70)
    );
}

#[test]
fn list_shows_the_resources_held_on_a_quorum_under_a_prefix() {
    let nodes = cluster(3);
    let hour = Duration::from_secs(3600);
    let plant = |resource: &str, on: usize| {
        for node in 0..on {
            common::plant_holder(&nodes, node, resource, "someone", hour);
        }
    };
    plant("jobs:a", 3);
    plant("jobs:b", 2);
    plant("jobs:c", 1); // on a minority only: not held
    plant("other", 3);

    let jobs = run(&nodes, &["list", "jobs:"]);
    assert_eq!(jobs.status.code(), Some(0), "{jobs:?}");
    assert_eq!(text(&jobs.stdout), "jobs:a\njobs:b\n");
    let all = run(&nodes, &["list"]);
    assert_eq!(text(&all.stdout), "jobs:a\njobs:b\nother\n", "{all:?}");

    let limited = run(&nodes, &["list", "--limit", "1", "jobs:"]);
    assert_eq!(limited.status.code(), Some(0), "{limited:?}");
    assert_eq!(text(&limited.stdout), "jobs:a\n");
    assert!(
        text(&limited.stderr).contains("there may be more"),
        "{limited:?}"
    );

    let json = run(&nodes, &["list", "--json", "jobs:"]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["resources"], serde_json::json!(["jobs:a", "jobs:b"]));
    assert_eq!(json["truncated"], false);

    let none = run(&nodes, &["list", "nothing:"]);
    assert_eq!(none.status.code(), Some(0), "{none:?}");
    assert!(none.stdout.is_empty(), "{none:?}");
    assert_eq!(
        run(&nodes, &["list", "--limit", "0"]).status.code(),
        Some(64)
    );
}

#[test]
fn with_three_of_five_nodes_down_every_new_command_exits_69_and_runs_nothing() {
    let nodes = cluster(5);
    for node in 0..3 {
        nodes.kill(node).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let marker = marker.to_str().unwrap();
    let cases: [&[&str]; 5] = [
        &["exec", "-n", "2", "pool", "--", "touch", marker],
        &["elect", "--wait", "1s", "jobs", "--", "touch", marker],
        &["leader", "jobs"],
        &["release", "--force", "stuck"],
        &["list"],
    ];
    for args in cases {
        let output = run(&nodes, args);
        assert_eq!(output.status.code(), Some(69), "{args:?}: {output:?}");
        assert!(
            text(&output.stderr).contains("quorum unavailable"),
            "{args:?}: {output:?}"
        );
        assert!(!Path::new(marker).exists(), "{args:?} ran the command");
        assert!(output.stdout.is_empty(), "{args:?}: {output:?}");
    }
}

#[test]
fn elect_against_nodes_that_refuse_writes_exits_69_with_or_without_a_wait() {
    let nodes = cluster(3);
    // Every node answers, reads included, but refuses every write (OOM).
    for node in 0..3 {
        nodes
            .command(node, &["CONFIG", "SET", "maxmemory-policy", "noeviction"])
            .unwrap();
        nodes
            .command(node, &["CONFIG", "SET", "maxmemory", "1"])
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let marker = marker.to_str().unwrap();
    for wait in ["0s", "1s"] {
        let output = run(
            &nodes,
            &["elect", "--wait", wait, "jobs", "--", "touch", marker],
        );
        assert_eq!(output.status.code(), Some(69), "--wait {wait}: {output:?}");
        assert!(
            text(&output.stderr).contains("quorum unavailable"),
            "--wait {wait}: {output:?}"
        );
        assert!(!Path::new(marker).exists(), "--wait {wait} ran the command");
    }
}
