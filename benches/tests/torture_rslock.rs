//! The rslock torture (`examples/torture_peer`) end to end on real local
//! nodes: a short run without faults grants rslock's locks, the key audit
//! reads its keys under the run's prefix with its lock values as owners,
//! renewing holders extend through it, and the checker judges the history
//! and finds nothing (no faults, no paused holders). What the checker
//! finds in rslock under faults is measured by the example, not here
//! (docs/comparison.md).

#[path = "../examples/torture_peer/plan.rs"]
mod plan;
#[path = "../examples/torture_peer/rslock.rs"]
mod rslock;

use std::collections::HashSet;
use std::time::Duration;

use redquorum_harness::Holder;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rslock_under_the_torture_is_granted_audited_and_judged() {
    let mut plan = plan::default_plan(rslock::Rslock, Vec::new(), Duration::from_secs(3), 1, false);
    plan.clients = 6;
    plan.groups = 2;
    plan.resources = 2;
    // Renewing holders half the time: on a loaded machine a 3 s run has few
    // sessions, and one of them must extend.
    plan.holders = vec![
        (Holder::Brief, 1),
        (Holder::ToDeadline, 1),
        (Holder::Renewing, 2),
    ];
    let ran = plan.execute().await.expect("nodes and store start");
    let granted: HashSet<&str> = ran
        .file
        .sessions
        .iter()
        .filter(|s| s.grant.is_some())
        .map(|s| s.owner.as_str())
        .collect();
    assert!(
        ran.exercised.granted > 0,
        "nothing granted: {:?}",
        ran.vacuous
    );
    assert!(ran.exercised.completed > 0, "no protected write accepted");
    assert!(
        ran.file
            .keys
            .iter()
            .any(|k| granted.contains(k.owner.as_str())),
        "the key audit saw no key of a granted rslock holder"
    );
    assert!(
        ran.file.sessions.iter().any(|s| !s.extensions.is_empty()),
        "no renewing holder extended through rslock"
    );
    assert!(ran.verdict.is_ok(), "{:#?}", ran.verdict.violations);
}
