//! `exec --min-hold`: one cron run per schedule window. A quick command's
//! lock stays held until the window has passed, so a second host firing
//! inside the window exits 75 without running the command; after the
//! window the lock is free again.

mod common;

use std::fs;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{cluster, eventually, redquorum, wait_within};

#[test]
fn a_quick_command_keeps_the_lock_for_the_window_and_then_releases_it() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let first_ran = dir.path().join("first");
    let second_ran = dir.path().join("second");
    // Long enough that the second host's start (a process, a connection,
    // one attempt) fits well inside it even on a loaded machine.
    let window = Duration::from_secs(10);

    let started = Instant::now();
    let mut first = redquorum(&nodes)
        .args(["exec", "--min-hold", "10s", "nightly", "--", "touch"])
        .arg(&first_ran)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        eventually(Duration::from_secs(20), || first_ran.exists()),
        "the first host never ran the job"
    );

    // A second host firing after the job ended, inside the window.
    let second = redquorum(&nodes)
        .args(["-q", "exec", "nightly", "--", "touch"])
        .arg(&second_ran)
        .output()
        .unwrap();
    assert!(
        started.elapsed() < window,
        "the second host came too late to test"
    );
    assert_eq!(second.status.code(), Some(75), "{second:?}");
    assert!(!second_ran.exists(), "the job ran twice in one window");
    assert!(second.stderr.is_empty(), "-q printed: {second:?}");

    // The first exits with the command's status once the window has passed
    // (never before: it holds until `acquired + 10s`), and releases.
    let status = wait_within(&mut first, Duration::from_secs(30));
    assert!(status.success(), "{status:?}");
    assert!(
        started.elapsed() >= window,
        "released before the window ended"
    );
    let third = redquorum(&nodes)
        .args(["exec", "nightly", "--", "true"])
        .output()
        .unwrap();
    assert!(
        third.status.success(),
        "the lock was not released: {third:?}"
    );
    let _ = fs::remove_file(&first_ran);
}

#[test]
fn sigterm_ends_the_hold_early_and_releases() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let mut holder = redquorum(&nodes)
        .args(["exec", "--min-hold", "10m", "held", "--", "touch"])
        .arg(&ran)
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(20), || ran.exists()));
    let pid = nix::unistd::Pid::from_raw(holder.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = wait_within(&mut holder, Duration::from_secs(30));
    assert!(status.success(), "exit status is the command's: {status:?}");
    let next = redquorum(&nodes)
        .args(["exec", "held", "--", "true"])
        .output()
        .unwrap();
    assert!(
        next.status.success(),
        "not released after SIGTERM: {next:?}"
    );
}

#[test]
fn sigterm_while_the_command_runs_stops_it_and_skips_the_hold() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let mut holder = redquorum(&nodes)
        .args(["exec", "--min-hold", "10m", "busy", "--", "sh", "-c"])
        .arg(r#"touch "$STARTED"; exec sleep 60"#)
        .env("STARTED", &started)
        .spawn()
        .unwrap();
    assert!(eventually(Duration::from_secs(20), || started.exists()));
    let pid = nix::unistd::Pid::from_raw(holder.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    // Forwarded to the command (128 + SIGTERM), and no 10-minute hold follows.
    let status = wait_within(&mut holder, Duration::from_secs(30));
    assert_eq!(status.code(), Some(143), "{status:?}");
    let next = redquorum(&nodes)
        .args(["exec", "busy", "--", "true"])
        .output()
        .unwrap();
    assert!(next.status.success(), "still held: {next:?}");
}
