//! Unit tests and proptests of the checker (`checker.rs`): each rule shown
//! failing on a planted history.

use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::evidence::KeyLife;
use crate::faults::FaultEvent;

pub(super) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub(super) fn values(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

#[test]
fn an_overlap_is_excused_only_by_a_force_release_between_the_holders() {
    use crate::evidence::{OperatorAction, OperatorCall};
    let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
    let b = Session::granted(1, "r", "b", ms(50), ms(60), ms(200));
    let values = values(&[("r", 2)]);
    let force = |start: u64| OperatorCall {
        resource: "r".into(),
        start: ms(start),
        end: ms(start + 5),
        action: OperatorAction::ForceRelease { fence: None },
    };
    let sessions = [a, b];
    let verdict_with = |calls: &[OperatorCall]| {
        check_evidence(&Evidence {
            operator: calls,
            ..Evidence::new(&sessions, &values)
        })
    };
    assert_eq!(verdict_with(&[]).count("overlap"), 1);
    assert!(verdict_with(&[force(30)]).is_ok());
    assert_eq!(
        verdict_with(&[force(70)]).count("overlap"),
        1,
        "after b's grant"
    );
}

#[test]
fn sequential_holders_with_matching_value_pass() {
    let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
    let b = Session::granted(1, "r", "b", ms(50), ms(100), ms(200));
    let verdict = check(&[a, b], &values(&[("r", 2)]), &[]);
    assert!(verdict.is_ok(), "{:?}", verdict.violations);
}

#[test]
fn grant_inside_an_earlier_window_is_an_overlap_naming_both_sessions() {
    let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
    let b = Session::granted(1, "r", "b", ms(10), ms(99), ms(200));
    let verdict = check(&[b.clone(), a.clone()], &values(&[("r", 2)]), &[]);
    assert_eq!(
        verdict.violations,
        vec![Violation::Overlap {
            first: Box::new(a),
            second: Box::new(b)
        }]
    );
}

#[test]
fn an_early_release_ends_the_window() {
    let mut a = Session::granted(0, "r", "a", ms(0), ms(1), ms(1000));
    a.release = Some(ms(20));
    let b = Session::granted(1, "r", "b", ms(10), ms(20), ms(900));
    assert!(check(&[a, b], &values(&[("r", 2)]), &[]).is_ok());
}

#[test]
fn different_resources_never_overlap() {
    let a = Session::granted(0, "r1", "a", ms(0), ms(1), ms(100));
    let b = Session::granted(1, "r2", "b", ms(0), ms(1), ms(100));
    assert!(check(&[a, b], &values(&[("r1", 1), ("r2", 1)]), &[]).is_ok());
}

#[test]
fn a_value_below_the_completed_count_is_a_counter_mismatch() {
    let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
    let b = Session::granted(1, "r", "b", ms(0), ms(100), ms(200));
    let verdict = check(&[a, b], &values(&[("r", 1)]), &[]);
    assert_eq!(verdict.count("counter"), 1);
    assert_eq!(verdict.violations.len(), 1);
}

#[test]
fn indeterminate_writes_widen_the_accepted_range() {
    let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
    let mut b = Session::granted(1, "r", "b", ms(0), ms(100), ms(200));
    b.outcome = Outcome::Indeterminate("io".into());
    assert!(check(&[a.clone(), b.clone()], &values(&[("r", 1)]), &[]).is_ok());
    assert!(check(&[a.clone(), b.clone()], &values(&[("r", 2)]), &[]).is_ok());
    assert_eq!(
        check(&[a, b], &values(&[("r", 3)]), &[]).count("counter"),
        1
    );
}

#[test]
fn a_value_without_sessions_must_be_zero() {
    assert_eq!(check(&[], &values(&[("r", 1)]), &[]).count("counter"), 1);
    assert!(check(&[], &values(&[("r", 0)]), &[]).is_ok());
}

#[test]
fn a_write_after_validity_is_stale() {
    let mut a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
    a.write_start = Some(ms(150));
    a.write_end = Some(ms(151));
    let verdict = check(&[a], &values(&[("r", 1)]), &[]);
    assert_eq!(verdict.count("stale-write"), 1);
}

#[test]
fn fences_must_strictly_increase_in_grant_order() {
    let mut a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
    let mut b = Session::granted(1, "r", "b", ms(0), ms(100), ms(200));
    a.fence = Some(5);
    b.fence = Some(5);
    let verdict = check(&[a.clone(), b.clone()], &values(&[("r", 2)]), &[]);
    assert_eq!(verdict.count("fence"), 1);
    b.fence = Some(6);
    assert!(check(&[a, b], &values(&[("r", 2)]), &[]).is_ok());
}

#[test]
fn a_hold_taken_out_of_sight_is_held_only_to_holds_granted_before_its_attempt() {
    // `exec`: attempt from 0 ms, command (the recorded grant) at 150 ms;
    // its token came from a grant somewhere in between.
    let mut a = Session::granted(0, "r", "a", ms(0), ms(100), ms(200));
    let mut exec = Session::granted(1, "r", "x", ms(0), ms(150), ms(160));
    a.fence = Some(6);
    exec.fence = Some(5);
    exec.deadline_unseen = true;
    let sessions = [a.clone(), exec.clone()];
    assert_eq!(
        check(&sessions, &values(&[("r", 1)]), &[]).count("fence"),
        0
    );
    // Granted before the exec's attempt began: the lower token is an inversion.
    exec.start = ms(120);
    assert_eq!(
        check(&[a, exec], &values(&[("r", 1)]), &[]).count("fence"),
        1
    );
}

#[test]
fn refused_sessions_count_for_nothing() {
    let a = Session::refused(0, "r", ms(0), "contended");
    assert!(check(&[a], &values(&[("r", 0)]), &[]).is_ok());
}

#[test]
fn leaked_keys_are_reported() {
    let leak = LeakedKey {
        node: "n".into(),
        key: "lock:r".into(),
        pttl_ms: 5,
    };
    let verdict = check(&[], &BTreeMap::new(), std::slice::from_ref(&leak));
    assert_eq!(verdict.violations, vec![Violation::Leaked(leak)]);
}

/// An accepted read-modify-write: read `read`, wrote `read + 1`.
fn rmw(client: usize, owner: &str, grant: u64, end: u64, read: i64) -> Session {
    let mut s = Session::granted(client, "r", owner, ms(grant), ms(grant), ms(end));
    s.read = Some(read);
    s.read_at = Some(ms(grant));
    s.wrote = Some(read + 1);
    s.write_start = Some(ms(end - 1));
    s.write_end = Some(ms(end - 1));
    s
}

#[test]
fn two_writes_from_the_same_read_are_a_lost_update_naming_both() {
    let a = rmw(0, "a", 0, 100, 0);
    let b = rmw(1, "b", 100, 200, 1);
    let c = rmw(2, "c", 200, 300, 1); // read before b's write landed: b's update is lost
    let verdict = check(&[a, b.clone(), c.clone()], &values(&[("r", 2)]), &[]);
    // The counter is one short too.
    assert_eq!(verdict.count("counter"), 1);
    assert_eq!(
        verdict.violations[..1],
        [Violation::LostUpdate {
            lost: Box::new(b),
            by: Box::new(c)
        }]
    );
    assert!(verdict.violations[0].to_string().contains("both read 1"));
}

#[test]
fn a_fenced_write_below_an_accepted_token_is_a_stale_write() {
    let mut a = rmw(0, "a", 0, 100, 0);
    a.fence = Some(10);
    let mut b = rmw(1, "b", 100, 200, 1);
    b.fence = Some(20);
    // c was granted later (not overlapping) yet carries a lower token, and was accepted.
    let mut c = rmw(2, "c", 200, 300, 2);
    c.fence = Some(15);
    let verdict = check(&[a, b.clone(), c.clone()], &values(&[("r", 3)]), &[]);
    assert_eq!(verdict.count("stale-write"), 1, "{:?}", verdict.violations);
    assert_eq!(verdict.count("fence"), 1);
    assert!(
        matches!(&verdict.violations[1], Violation::StaleWrite { by: Some(by), .. } if **by == b)
    );
    // A refused stale write is fencing working: no violation but the fence order.
    c.outcome = Outcome::Rejected;
    let verdict = check(&[c], &values(&[("r", 0)]), &[]);
    assert!(verdict.is_ok(), "{:?}", verdict.violations);
}

#[test]
fn an_extension_inside_another_holders_window_is_an_overlap() {
    let mut a = Session::granted(0, "r", "a", ms(0), ms(0), ms(100));
    a.extensions.push(crate::evidence::Extension {
        at: ms(150),
        until: ms(400),
    });
    a.release = Some(ms(300));
    let b = Session::granted(1, "r", "b", ms(100), ms(110), ms(200));
    let verdict = check(&[a, b], &values(&[("r", 2)]), &[]);
    assert_eq!(verdict.count("overlap"), 1, "{:?}", verdict.violations);
}

fn life(node: usize, owner: &str, last_seen: u64, age: u64) -> KeyLife {
    KeyLife {
        node,
        key: "lock:r".into(),
        owner: owner.into(),
        first_seen: ms(last_seen),
        last_seen: ms(last_seen),
        last_sent: None,
        age: ms(age),
        gone: None,
        left: None,
        back_after: None,
    }
}

#[test]
fn a_key_outliving_its_release_or_its_unwind_is_an_orphan_unless_a_fault_explains_it() {
    let a = Session::granted(0, "r", "a", ms(0), ms(0), ms(100));
    let keys = [
        life(0, "a", 1200, 1200), // a released at 100: an orphan at 1200 (slack 1 s)
        life(1, "a", 900, 900),   // within the slack
        life(2, "never", 3000, 1500), // an unwound attempt's key, 1.5 s old
        life(3, "never-2", 3000, 500), // younger than the slack
        life(4, "never-3", 3000, 1500), // but node 4 was stalled meanwhile
        life(5, "a", 1200, 1200), // node 5 restarted just before a's release
    ];
    let faults = [
        FaultEvent::new(crate::faults::FaultKind::Stall, vec![4], ms(2000), ms(2100)),
        FaultEvent::new(crate::faults::FaultKind::Kill, vec![5], ms(40), ms(60)),
    ];
    let protected = values(&[("r", 1)]);
    let sessions = [a];
    let evidence = Evidence {
        keys: &keys,
        faults: &faults,
        ..Evidence::new(&sessions, &protected)
    };
    let verdict = check_evidence(&evidence);
    let nodes: Vec<usize> = verdict
        .violations
        .iter()
        .filter_map(|v| match v {
            Violation::OrphanKey { key, .. } => Some(key.node),
            _ => None,
        })
        .collect();
    assert_eq!(nodes, vec![0, 2], "{:?}", verdict.violations);
    // A script flush is no excuse: it cannot hold a command back.
    let flush = [FaultEvent::new(
        crate::faults::FaultKind::ScriptFlush,
        vec![2],
        ms(2000),
        ms(2000),
    )];
    let evidence = Evidence {
        faults: &flush,
        ..evidence
    };
    assert_eq!(check_evidence(&evidence).count("orphan-key"), 4);
}

/// Holders one after another, each granted at or after the previous window's end.
fn sequential(gaps: &[(u64, u64)]) -> Vec<Session> {
    let mut t = 0;
    gaps.iter()
        .enumerate()
        .map(|(i, (gap, len))| {
            let grant = t + gap;
            t = grant + len;
            Session::granted(i, "r", &format!("o{i}"), ms(grant), ms(grant), ms(t))
        })
        .collect()
}

#[test]
fn a_lease_renewed_after_its_deadline_is_caught_and_a_timely_renewal_is_not() {
    let mut timely = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
    timely.extensions = vec![crate::evidence::Extension {
        at: ms(70),
        until: ms(170),
    }];
    // Paused past its deadline, then renewed: nothing held from 100 to 300.
    let mut revived = Session::granted(1, "q", "b", ms(0), ms(1), ms(100));
    revived.extensions = vec![crate::evidence::Extension {
        at: ms(300),
        until: ms(400),
    }];
    assert!(check(&[timely.clone()], &values(&[("r", 1)]), &[]).is_ok());
    let values = values(&[("r", 1), ("q", 1)]);
    let verdict = check(&[timely, revived], &values, &[]);
    assert_eq!(verdict.count("revived"), 1, "{verdict:?}");
    assert_eq!(verdict.violations.len(), 1);
    assert!(
        verdict.violations[0]
            .to_string()
            .contains("renewed after it ended")
    );
}

proptest! {
    #[test]
    fn sequential_histories_pass(gaps in proptest::collection::vec((0_u64..50, 1_u64..50), 0..40)) {
        let sessions = sequential(&gaps);
        let n = sessions.len() as i64;
        prop_assert!(check(&sessions, &values(&[("r", n)]), &[]).is_ok());
    }

    #[test]
    fn moving_any_grant_into_the_previous_window_is_caught(
        gaps in proptest::collection::vec((0_u64..50, 2_u64..50), 2..40),
        pick in any::<prop::sample::Index>(),
    ) {
        let mut sessions = sequential(&gaps);
        let i = 1 + pick.index(sessions.len() - 1);
        let previous_end = sessions[i - 1].exclusive_until().unwrap();
        sessions[i].grant = Some(previous_end - ms(1));
        let n = sessions.len() as i64;
        let verdict = check(&sessions, &values(&[("r", n)]), &[]);
        prop_assert_eq!(verdict.count("overlap"), 1);
    }
}

#[test]
fn a_hold_removed_by_another_or_come_back_is_reported_with_its_owner() {
    let mut a = Session::granted(0, "r", "a", ms(0), ms(100), ms(1900));
    a.release = Some(ms(1898));
    let mut removed = life(0, "a", 1000, 950);
    removed.gone = Some(ms(1100));
    let mut returned = life(1, "a", 1700, 50);
    returned.first_seen = ms(1650);
    returned.back_after = Some(ms(1600));
    let never_granted = KeyLife {
        gone: Some(ms(1100)),
        ..life(2, "unwound", 1000, 950)
    };
    let keys = [removed.clone(), returned.clone(), never_granted];
    let sessions = [a.clone()];
    let protected = values(&[("r", 1)]);
    let verdict = check_evidence(&Evidence {
        keys: &keys,
        ..Evidence::new(&sessions, &protected)
    });
    assert_eq!(
        verdict.violations,
        vec![
            Violation::HoldRemoved {
                key: removed,
                owner: Box::new(a.clone())
            },
            Violation::HoldCameBack {
                key: returned,
                owner: Box::new(a)
            }
        ]
    );
    assert_eq!(verdict.count("hold-removed"), 1);
    assert_eq!(verdict.count("hold-came-back"), 1);
    assert!(
        verdict.violations[0]
            .to_string()
            .contains("gone by 1100.0 ms")
    );
    assert_eq!(verdict.violations[1].at(), Some(ms(1650)));
}
