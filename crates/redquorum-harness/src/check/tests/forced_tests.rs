//! Unit tests of the force-release excuse (`forced.rs`).

use super::*;
use crate::check::operator::tests::{force, inspect, ms, two_holders};
use crate::faults::FaultKind;

/// The force-releases among `calls`, in a run without faults.
fn no_fault(calls: &[OperatorCall]) -> ForceReleases<'_> {
    ForceReleases::new(calls, &[], Duration::from_secs(1))
}

#[test]
fn only_a_force_release_between_the_first_acquire_and_the_second_grant_excuses_an_overlap() {
    let sessions = two_holders();
    let (a, b) = (&sessions[0], &sessions[1]);
    assert!(no_fault(&[force(300, None)]).excuse_overlap(a, a.start, b));
    assert!(
        !no_fault(&[force(700, Some(10))]).excuse_overlap(a, a.start, b),
        "after b's grant"
    );
    let inspections = [inspect(300, &["a"], 3)];
    assert!(!no_fault(&inspections).excuse_overlap(a, a.start, b));
    let mut elsewhere = force(300, Some(7));
    elsewhere.resource = "q".into();
    assert!(!no_fault(&[elsewhere]).excuse_overlap(a, a.start, b));
}

/// Seen in a loaded run: a force-release whose removal a partition of the
/// operator's client group held (stall mode: the bytes were delivered when
/// it healed, 450 ms after the call had given up on those nodes) took the
/// ousted holder's hold off two nodes after that holder's extension, asked
/// after the call ended, had been renewed; a successor was then granted.
#[test]
fn a_force_release_a_fault_held_back_excuses_overlaps_until_the_slack_after_it_healed() {
    let slack = Duration::from_secs(1);
    // `a` began at 0 and extended at 1 400 (after the call ended at 302);
    // `b` was granted at 2 000.
    let mut a = Session::granted(0, "r", "a", ms(0), ms(10), ms(2400));
    a.extensions = vec![crate::evidence::Extension {
        at: ms(1400),
        until: ms(2400),
    }];
    let b = Session::granted(1, "r", "b", ms(1900), ms(2000), ms(3000));
    let calls = [force(300, None)];
    let partition = |group, end| {
        let mut f = FaultEvent::new(FaultKind::Partition, vec![1, 3], ms(250), ms(end));
        f.group = Some(group);
        f
    };
    let excused = |faults: &[FaultEvent], a: &Session| {
        ForceReleases::new(&calls, faults, slack).excuse_overlap(a, ms(1400), &b)
    };
    // No fault: the extension asked after the call ended found the holds gone.
    assert!(!excused(&[], &a));
    // The operator's group held back until 800: the removal may land until 1 800.
    assert!(excused(&[partition(OPERATOR_GROUP, 800)], &a));
    // Healed too early for the slack to reach the extension.
    assert!(!excused(&[partition(OPERATOR_GROUP, 300)], &a));
    // Another group's partition never held the operator's commands.
    assert!(!excused(&[partition(OPERATOR_GROUP + 1, 800)], &a));
    // A holder that began after the call ended was not there to be found.
    let mut late = a.clone();
    late.start = ms(400);
    assert!(!excused(&[partition(OPERATOR_GROUP, 800)], &late));
}

/// A force-release between two read-modify-writes of the same value: the
/// lost update is excused (and the counter one short) only when one of the
/// two holders had no token; between two token holders fencing had to keep
/// the ousted write out, so it stays a violation.
#[test]
fn a_force_release_excuses_a_lost_update_only_beside_a_holder_without_a_token() {
    let verdict = |fences: (Option<u64>, Option<u64>), calls: &[OperatorCall]| {
        let mut sessions = two_holders();
        for (s, fence) in sessions.iter_mut().zip([fences.0, fences.1]) {
            s.fence = fence;
            s.release = Some(ms(900));
            (s.read, s.wrote) = (Some(0), Some(1));
            s.write_start = Some(s.grant.unwrap() + ms(1));
            s.write_end = s.write_start;
        }
        let values = std::collections::BTreeMap::from([("r".to_owned(), 1)]);
        let evidence = crate::check::Evidence {
            operator: calls,
            ..crate::check::Evidence::new(&sessions, &values)
        };
        let verdict = crate::check::check_evidence(&evidence);
        (verdict.count("lost-update"), verdict.count("counter"))
    };
    let ousted = [force(300, Some(7))];
    assert_eq!(
        verdict((None, Some(9)), &ousted),
        (0, 0),
        "a without a token, ousted"
    );
    assert_eq!(
        verdict((Some(5), None), &ousted),
        (0, 0),
        "b without a token"
    );
    assert_eq!(
        verdict((Some(5), Some(9)), &ousted),
        (1, 1),
        "fencing had to save it"
    );
    assert_eq!(verdict((None, Some(9)), &[]), (1, 1), "no force-release");
    assert_eq!(
        verdict((None, None), &[force(700, None)]),
        (1, 1),
        "after b's grant"
    );
}

/// `a` granted at 10 (lease to 1000) and ousted by a force-release
/// (300..`end`); `b` granted at 400 (to 1500); `a`'s extension, sent at
/// `sent`, succeeded (until 1900) and `a` released at 1200. The overlaps
/// the check reports.
fn overlaps_after_an_ousted_extension(sent: u64, end: u64) -> usize {
    let mut a = Session::granted(0, "r", "a", ms(0), ms(10), ms(1000));
    a.extensions.push(crate::evidence::Extension {
        at: ms(sent),
        until: ms(1900),
    });
    a.release = Some(ms(1200));
    let b = Session::granted(1, "r", "b", ms(350), ms(400), ms(1500));
    let mut sessions = vec![a, b];
    for s in &mut sessions {
        s.outcome = crate::evidence::Outcome::ReadOnly;
    }
    let values = std::collections::BTreeMap::from([("r".to_owned(), 0)]);
    let mut call = force(300, Some(7));
    call.end = ms(end);
    let calls = [call];
    let evidence = crate::check::Evidence {
        operator: &calls,
        ..crate::check::Evidence::new(&sessions, &values)
    };
    crate::check::check_evidence(&evidence).count("overlap")
}

/// An extension sent before a force-release ended may have landed before
/// it removed the holder's keys: the ousted holder then believes in the
/// extended lease (by design, until its next extension fails), even when
/// its window starts after the next holder's grant. Sent after the
/// force-release ended (and no fault held its removal back), it had to
/// fail: its success is a violation.
#[test]
fn an_extension_sent_before_the_force_release_ended_is_excused_and_one_sent_after_it_is_not() {
    assert_eq!(
        overlaps_after_an_ousted_extension(200, 302),
        0,
        "before b's grant"
    );
    assert_eq!(
        overlaps_after_an_ousted_extension(450, 500),
        0,
        "after b's grant, before the force-release ended"
    );
    assert_eq!(
        overlaps_after_an_ousted_extension(600, 500),
        1,
        "sent after the force-release ended"
    );
}
