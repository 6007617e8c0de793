//! `redquorum lock`, `extend` and `unlock` as the steps of a pipeline, run
//! by `sh` against real nodes: the lock outlives the step that took it, a
//! later step renews and releases it with the ticket; the exit statuses of
//! a contended lock (75), a gone hold (70), a malformed ticket or one of a
//! write lock (64) and a ticket that could not be written (74).

mod common;

use std::process::Output;

use common::{cluster, lock_key};

/// Runs `script` under `sh -c` with the nodes in `REDQUORUM_NODES` and the
/// binary as `$RQ`.
fn sh(nodes: &redquorum_harness::Cluster, script: &str) -> Output {
    std::process::Command::new("sh")
        .args(["-c", script])
        .env("REDQUORUM_NODES", nodes.urls().join(","))
        .env_remove("REDQUORUM_TICKET")
        .env("RQ", common::BIN)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("sh runs")
}

/// The owner of `resource`'s plain hold on each node (None where absent).
fn owners(nodes: &redquorum_harness::Cluster, resource: &str) -> Vec<Option<String>> {
    (0..nodes.len())
        .map(|i| {
            let value = nodes.command(i, &["GET", &lock_key(resource)]).unwrap();
            value.as_text()
        })
        .collect()
}

#[test]
fn a_lock_taken_in_one_step_is_extended_and_released_in_later_ones() {
    let nodes = cluster(3);
    // Step 1 takes the lock and exits; it stays held, so a second `lock`
    // is contended (75, nothing printed).
    let out = sh(
        &nodes,
        r#"T=$("$RQ" lock deploy --ttl 20s) || exit 1
           "$RQ" lock deploy --ttl 20s; echo "second=$?" >&2
           printf '%s' "$T""#,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("second=75"), "{stderr}");
    let ticket = String::from_utf8(out.stdout).unwrap();
    assert!(ticket.starts_with("rq1:lock:"), "{ticket:?}");
    assert!(
        !stderr.contains(&ticket),
        "the ticket was printed on stderr"
    );
    let held = owners(&nodes, "deploy");
    assert!(held.iter().filter(|o| o.is_some()).count() >= 2, "{held:?}");

    // Step 2 renews it (the ticket again on stdout: same owner); step 3
    // releases it through REDQUORUM_TICKET.
    let out = sh(
        &nodes,
        &format!(
            r#"T=$("$RQ" extend --ttl 40s '{ticket}') || exit 1
               REDQUORUM_TICKET="$T" "$RQ" unlock || exit 2
               "$RQ" unlock "$T"; echo "again=$?" >&2"#
        ),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Released already: the hold is gone, nothing removed (70).
    assert!(stderr.contains("again=70"), "{stderr}");
    assert_eq!(owners(&nodes, "deploy"), vec![None; 3]);
}

#[test]
fn a_ticket_that_cannot_be_written_leaves_no_hold_behind() {
    let nodes = cluster(3);
    // stdout fails every write (ENOSPC): nobody could learn the ticket, so
    // the hold is released and the exit says so (74); the next `lock`
    // takes the lock at once instead of waiting out the 20 s.
    let out = sh(
        &nodes,
        r#""$RQ" lock deploy --ttl 20s >/dev/full; echo "first=$?" >&2
           "$RQ" lock deploy --ttl 20s >/dev/null; echo "next=$?" >&2"#,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("first=74"), "{stderr}");
    assert!(stderr.contains("lock released"), "{stderr}");
    assert!(stderr.contains("next=0"), "{stderr}");
}

#[test]
fn an_extension_keeps_the_lock_past_its_first_ttl() {
    let nodes = cluster(3);
    let out = sh(
        &nodes,
        r#"T=$("$RQ" lock job --ttl 1s) || exit 1
           T=$("$RQ" extend --ttl 30s "$T") || exit 2
           printf '%s' "$T""#,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pttl = |i| {
        nodes
            .command(i, &["PTTL", &lock_key("job")])
            .unwrap()
            .as_int()
    };
    // Renewed to 30 s: far past the first 1 s TTL on every node that has it.
    let renewed = (0..3)
        .filter(|&i| pttl(i).is_some_and(|ms| ms > 20_000))
        .count();
    assert!(renewed >= 2, "{:?}", (0..3).map(pttl).collect::<Vec<_>>());
}

#[test]
fn a_malformed_ticket_is_a_usage_error_that_touches_nothing() {
    let nodes = cluster(3);
    let out = sh(
        &nodes,
        r#""$RQ" lock kept --ttl 20s >/dev/null || exit 1
           "$RQ" unlock 'rq1:lock:not-a-token:-:0:kept'; echo "code=$?" >&2
           "$RQ" unlock 'rq1:write:0123456789abcdef0123456789abcdef:-:0:kept'; echo "write=$?" >&2"#,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("code=64"), "{stderr}");
    assert!(stderr.contains("not a lease ticket"), "{stderr}");
    // A write lock's ticket (the library's): the CLI takes plain locks'.
    assert!(stderr.contains("write=64"), "{stderr}");
    assert!(stderr.contains("a write ticket"), "{stderr}");
    let held = owners(&nodes, "kept");
    assert!(held.iter().filter(|o| o.is_some()).count() >= 2, "{held:?}");
}

#[test]
fn exec_runs_a_command_under_a_tickets_lock_and_spends_the_ticket() {
    let nodes = cluster(3);
    let out = sh(
        &nodes,
        r#"T=$("$RQ" lock deploy --ttl 20s) || exit 1
           "$RQ" exec --ticket "$T" other -- true; echo "other=$?" >&2
           "$RQ" exec --ticket "$T" deploy -- sh -c 'echo "ran on $REDQUORUM_RESOURCE"' || exit 2
           "$RQ" unlock "$T"; echo "spent=$?" >&2
           "$RQ" exec --ticket "$T" deploy -- sh -c 'echo "ran again"'; echo "stale=$?" >&2
           "$RQ" exec --ticket 'rq1:lock:zz' deploy -- true; echo "malformed=$?" >&2"#,
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "ran on deploy", "{stderr}");
    // exec released it when its command ended: the ticket's hold is gone,
    // and a command under the stale ticket never runs.
    assert!(stderr.contains("spent=70"), "{stderr}");
    assert!(stderr.contains("stale=70"), "{stderr}");
    assert!(stderr.contains("malformed=64"), "{stderr}");
    assert!(stderr.contains("other=64"), "{stderr}");
    assert_eq!(owners(&nodes, "deploy"), vec![None; 3]);
}
