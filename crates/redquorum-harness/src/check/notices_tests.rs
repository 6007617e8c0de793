//! Unit tests of the notices a kept holder must hear (`notices.rs`).

use std::collections::BTreeMap;

use super::*;
use crate::check::operator::tests::{force, ms};

/// A hold of "r" by client group 0, kept alive by its lock from its grant
/// at 10 ms, its holder releasing at `believed_until` ms.
fn kept(believed_until: u64) -> Session {
    let mut s = Session::granted(0, "r", "a", ms(0), ms(10), ms(2000));
    s.holder = Holder::Kept;
    s.renews_itself = true;
    s.release = Some(ms(believed_until));
    s
}

/// The loss-notice violations of `sessions` in a run of five nodes with
/// `calls`, `faults` and `lags`.
fn unheard(
    sessions: &[Session],
    calls: &[OperatorCall],
    faults: &[FaultEvent],
    lags: &[RuntimeLag],
) -> usize {
    let protected = BTreeMap::new();
    let mut evidence = Evidence::new(sessions, &protected);
    evidence.operator = calls;
    evidence.faults = faults;
    evidence.lags = lags;
    evidence.nodes = 5;
    super::unheard(&evidence).len()
}

#[test]
fn a_kept_holder_must_know_of_a_force_release_within_the_notice() {
    // Force-released at 2000..2002 ms: due by 2602.
    let calls = [force(2000, Some(7))];
    assert_eq!(unheard(&[kept(2100)], &calls, &[], &[]), 0);
    assert_eq!(unheard(&[kept(2600)], &calls, &[], &[]), 0);
    assert_eq!(
        unheard(&[kept(3300)], &calls, &[], &[]),
        1,
        "learned at its next renewal"
    );
}

#[test]
fn only_a_settled_kept_holder_and_a_force_release_that_worked_are_judged() {
    let late = [kept(3300)];
    // Failed (it may have freed only a minority), or before the watchdog
    // listened, or on another resource.
    assert_eq!(unheard(&late, &[force(2000, None)], &[], &[]), 0);
    assert_eq!(unheard(&late, &[force(500, Some(7))], &[], &[]), 0);
    let mut elsewhere = force(2000, Some(7));
    elsewhere.resource = "q".into();
    assert_eq!(unheard(&late, &[elsewhere], &[], &[]), 0);
    // A holder whose lease no lock keeps alive learns at its own renewal.
    let mut renewing = kept(3300);
    renewing.holder = Holder::Renewing;
    renewing.renews_itself = false;
    assert_eq!(unheard(&[renewing], &[force(2000, Some(7))], &[], &[]), 0);
    // Over before the call: nothing to learn.
    assert_eq!(unheard(&[kept(1900)], &[force(2000, Some(7))], &[], &[]), 0);
}

#[test]
fn faults_on_a_majority_or_a_held_runtime_excuse_a_late_notice() {
    let calls = [force(2000, Some(7))];
    let late = [kept(3300)];
    let fault = |kind, nodes: Vec<usize>| FaultEvent::new(kind, nodes, ms(1900), ms(2500));
    // A minority struck: the notice comes from the others.
    assert_eq!(
        unheard(&late, &calls, &[fault(FaultKind::Pause, vec![1, 2])], &[]),
        1
    );
    // A majority: excused, faults of several kinds together too.
    assert_eq!(
        unheard(
            &late,
            &calls,
            &[fault(FaultKind::SlowMajority, vec![0, 1, 2])],
            &[]
        ),
        0
    );
    let together = [
        fault(FaultKind::Kill, vec![0]),
        fault(FaultKind::Stall, vec![3, 4]),
    ];
    assert_eq!(unheard(&late, &calls, &together, &[]), 0);
    // Faults that hold no message back do not excuse it.
    assert_eq!(
        unheard(
            &late,
            &calls,
            &[fault(FaultKind::ScriptFlush, vec![0, 1, 2])],
            &[]
        ),
        1
    );
    // Another group's partition does not; the holder's group's does.
    let partition = |group| fault(FaultKind::Partition, vec![0, 1, 2]).on_group(group);
    assert_eq!(unheard(&late, &calls, &[partition(1)], &[]), 1);
    assert_eq!(unheard(&late, &calls, &[partition(0)], &[]), 0);
    // The group's proxies to a majority held by a starved machine.
    let proxy = |node| RuntimeLag {
        group: 0,
        node: Some(node),
        at: ms(2300),
        late: ms(200),
    };
    assert_eq!(unheard(&late, &calls, &[], &[proxy(0), proxy(1)]), 1);
    assert_eq!(
        unheard(&late, &calls, &[], &[proxy(0), proxy(1), proxy(2)]),
        0
    );
    // The group's runtime held until 2900: due 600 ms after it woke.
    let runtime = RuntimeLag {
        group: 0,
        node: None,
        at: ms(2900),
        late: ms(700),
    };
    assert_eq!(unheard(&[kept(3400)], &calls, &[], &[runtime]), 0);
    assert_eq!(unheard(&[kept(3600)], &calls, &[], &[runtime]), 1);
}

/// An ask of "r" from `start` ms, returned 500 ms later, the resource
/// still held then.
fn ask(start: u64) -> OperatorCall {
    OperatorCall {
        resource: "r".into(),
        start: ms(start),
        end: ms(start + 500),
        action: OperatorAction::Ask { freed: Some(false) },
    }
}

#[test]
fn a_kept_holder_must_hear_an_ask_within_the_notice() {
    // Its job began at 50 ms (its store read); asked at 2000: due by 2600.
    let asked = |heard: Option<u64>, believed_until: u64| {
        let mut s = kept(believed_until);
        s.read_at = Some(ms(50));
        s.asked = heard.map(ms);
        s
    };
    let calls = [ask(2000)];
    assert_eq!(unheard(&[asked(Some(2030), 2100)], &calls, &[], &[]), 0);
    assert_eq!(
        unheard(&[asked(None, 3300)], &calls, &[], &[]),
        1,
        "worked on, deaf"
    );
    assert_eq!(
        unheard(&[asked(Some(2900), 3000)], &calls, &[], &[]),
        1,
        "heard late"
    );
    // Over before the due time for another reason (lost, job done).
    assert_eq!(unheard(&[asked(None, 2500)], &calls, &[], &[]), 0);
    // An ask before it listened a second, one that failed, one elsewhere.
    assert_eq!(unheard(&[asked(None, 3300)], &[ask(900)], &[], &[]), 0);
    let mut failed = ask(2000);
    failed.action = OperatorAction::Ask { freed: None };
    assert_eq!(unheard(&[asked(None, 3300)], &[failed], &[], &[]), 0);
    let mut elsewhere = ask(2000);
    elsewhere.resource = "q".into();
    assert_eq!(unheard(&[asked(None, 3300)], &[elsewhere], &[], &[]), 0);
    // Faults on a majority meanwhile excuse it.
    let majority = FaultEvent::new(FaultKind::Stall, vec![0, 1, 2], ms(1900), ms(2300));
    assert_eq!(unheard(&[asked(None, 3300)], &calls, &[majority], &[]), 0);
}
