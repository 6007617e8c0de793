//! Unit tests and proptests of the operator's promises (`operator.rs`).

use std::collections::HashMap;

use super::*;
use crate::faults::FaultKind;

pub(in crate::check) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub(in crate::check) fn inspect(start: u64, holders: &[&str], answered: usize) -> OperatorCall {
    OperatorCall {
        resource: "r".into(),
        start: ms(start),
        end: ms(start + 2),
        action: OperatorAction::Inspect {
            holders: holders.iter().map(|h| (*h).to_owned()).collect(),
            answered,
            reported: None,
        },
    }
}

pub(in crate::check) fn force(start: u64, fence: Option<u64>) -> OperatorCall {
    OperatorCall {
        resource: "r".into(),
        start: ms(start),
        end: ms(start + 2),
        action: OperatorAction::ForceRelease { fence },
    }
}

/// `a` held 10..500 and released at 500 (confirmed at 505), token 5;
/// `b` acquired from 600, granted 610, token 9.
pub(in crate::check) fn two_holders() -> Vec<Session> {
    let mut a = Session::granted(0, "r", "a", ms(0), ms(10), ms(900));
    a.release = Some(ms(500));
    a.released = Some(ms(505));
    a.fence = Some(5);
    let mut b = Session::granted(1, "r", "b", ms(600), ms(610), ms(1500));
    b.fence = Some(9);
    vec![a, b]
}

pub(in crate::check) fn faults_of(
    sessions: &[Session],
    calls: &[OperatorCall],
    faults: &[FaultEvent],
) -> Vec<OperatorFault> {
    faults_with_keys(sessions, calls, faults, &[])
}

fn faults_with_keys(
    sessions: &[Session],
    calls: &[OperatorCall],
    faults: &[FaultEvent],
    keys: &[KeyLife],
) -> Vec<OperatorFault> {
    let owners: HashMap<&str, &Session> = sessions
        .iter()
        .filter(|s| s.grant.is_some())
        .map(|s| (s.owner.as_str(), s))
        .collect();
    let tried = crate::check::checker::attempts_by_token(sessions);
    let granted: Vec<&Session> = sessions.iter().filter(|s| s.grant.is_some()).collect();
    let slack = Duration::from_secs(1);
    broken_promises(
        "r",
        &granted,
        (&owners, &tried),
        calls,
        (3, keys),
        (faults, slack),
    )
    .into_iter()
    .map(|(_, _, fault)| fault)
    .collect()
}

#[test]
fn a_true_inspection_breaks_nothing() {
    let sessions = two_holders();
    let calls = [
        inspect(100, &["a"], 3),
        inspect(550, &[], 3),
        inspect(700, &["b"], 2),
    ];
    assert!(faults_of(&sessions, &calls, &[]).is_empty());
}

#[test]
fn naming_a_holder_after_its_confirmed_release_is_long_gone() {
    let sessions = two_holders();
    // Between the release's start and its confirmation: still possible.
    assert!(faults_of(&sessions, &[inspect(501, &["a"], 3)], &[]).is_empty());
    assert_eq!(
        faults_of(&sessions, &[inspect(520, &["a"], 2)], &[]),
        [OperatorFault::LongGone]
    );
}

#[test]
fn a_certain_holder_left_out_by_every_node_is_missed_unless_a_fault_explains_it() {
    let sessions = two_holders();
    assert_eq!(
        faults_of(&sessions, &[inspect(100, &[], 3)], &[]),
        [OperatorFault::Missed]
    );
    // Not every node answered: it may have been left out honestly.
    assert!(faults_of(&sessions, &[inspect(100, &[], 2)], &[]).is_empty());
    // Straddling the grant: not certain.
    assert!(faults_of(&sessions, &[inspect(9, &[], 3)], &[]).is_empty());
    let kill = FaultEvent::new(FaultKind::Kill, vec![1], ms(50), ms(60));
    assert!(faults_of(&sessions, &[inspect(100, &[], 3)], &[kill]).is_empty());
    // A majority killed and restarted from an AOF that had not yet
    // written the hold: its copies are gone.
    let restart = FaultEvent::new(FaultKind::RestartMajority, vec![0, 1], ms(50), ms(60));
    assert!(faults_of(&sessions, &[inspect(100, &[], 3)], &[restart]).is_empty());
    let calls = [force(40, Some(7)), inspect(100, &[], 3)];
    assert!(faults_of(&sessions, &calls, &[]).is_empty());
}

#[test]
fn a_call_round_trips_through_json_with_its_kind_tag() {
    for call in [inspect(1, &["a"], 3), force(2, Some(4)), force(3, None)] {
        let text = serde_json::to_string(&call).unwrap();
        assert!(
            text.contains(&format!("\"call\":\"{}\"", call.action.name())),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<OperatorCall>(&text).unwrap(), call);
    }
}

/// Holders one after another: each granted at `grant`, releasing at
/// `grant + len` and confirmed 1 ms later.
fn in_turn(lens: &[u64]) -> Vec<Session> {
    let mut t = 0;
    lens.iter()
        .enumerate()
        .map(|(i, len)| {
            let mut s =
                Session::granted(i, "r", &format!("o{i}"), ms(t), ms(t + 1), ms(t + 1 + len));
            s.released = Some(ms(t + 2 + len));
            t += 3 + len;
            s
        })
        .collect()
}

proptest::proptest! {
    /// An inspection that names exactly the holders whose hold may
    /// exist at some moment of it (from acquire start to confirmed
    /// release) is never blamed, whenever it comes.
    #[test]
    fn a_truthful_inspection_is_never_blamed(
        lens in proptest::collection::vec(1_u64..40, 1..20),
        at in proptest::collection::vec((0_u64..800, 0_u64..5), 1..30),
    ) {
        let sessions = in_turn(&lens);
        let calls: Vec<OperatorCall> = at
            .iter()
            .map(|(start, len)| {
                let (from, until) = (ms(*start), ms(start + len));
                let holders: Vec<&str> = sessions
                    .iter()
                    .filter(|s| s.start <= until && s.released.is_some_and(|r| r >= from))
                    .map(|s| s.owner.as_str())
                    .collect();
                let mut call = inspect(*start, &holders, 3);
                call.end = until;
                call
            })
            .collect();
        proptest::prop_assert!(faults_of(&sessions, &calls, &[]).is_empty());
    }

    /// Naming any holder after its confirmed release is always caught.
    #[test]
    fn naming_a_released_holder_is_always_caught(
        lens in proptest::collection::vec(1_u64..40, 1..20),
        pick in proptest::prelude::any::<proptest::sample::Index>(),
        later in 1_u64..500,
    ) {
        let sessions = in_turn(&lens);
        let gone = &sessions[pick.index(sessions.len())];
        let start = gone.released.unwrap() + ms(later);
        let call = inspect(u64::try_from(start.as_millis()).unwrap(), &[gone.owner.as_str()], 2);
        proptest::prop_assert_eq!(faults_of(&sessions, &[call], &[]), vec![OperatorFault::LongGone]);
    }
}

#[test]
fn ousted_and_naming_counts_see_only_what_tested_a_promise() {
    let sessions = two_holders();
    assert_eq!(ousted_holders(&sessions, &[force(100, Some(7))]), 1);
    assert_eq!(
        ousted_holders(&sessions, &[force(550, Some(7))]),
        0,
        "a released"
    );
    assert_eq!(ousted_holders(&sessions, &[force(100, None)]), 0);
    assert_eq!(inspections_naming_holders(&[inspect(1, &[], 3)]), 0);
}

/// `two_holders`, and an attempt `u` on `r` refused at 800 ms (its unwind
/// sent by then), and an attempt `w` a waiting acquire retried before its
/// grant (as `c`) at 1000 ms. (The inspections below hear 2 nodes of 3, so
/// a holder they leave out is not missed.)
fn with_unwound_attempts() -> Vec<Session> {
    let mut sessions = two_holders();
    let mut refused = Session::refused(2, "r", ms(700), "contended");
    refused.ended = Some(ms(800));
    refused.tried = vec!["u".into()];
    let mut waited = Session::granted(3, "r", "c", ms(650), ms(1000), ms(3000));
    waited.tried = vec!["w".into(), "c".into()];
    sessions.extend([refused, waited]);
    sessions
}

#[test]
fn naming_an_attempt_unwound_before_the_inspection_breaks_the_promise() {
    let sessions = with_unwound_attempts();
    // While it may still be on a quorum (in flight, or its unwind sent late).
    assert!(faults_of(&sessions, &[inspect(750, &["u"], 2)], &[]).is_empty());
    assert!(faults_of(&sessions, &[inspect(1200, &["u"], 2)], &[]).is_empty());
    // Long after its unwind was due: no quorum can hold it.
    assert_eq!(
        faults_of(&sessions, &[inspect(1400, &["u"], 2)], &[]),
        [OperatorFault::NamedUnwound]
    );
    // The retried attempt of an acquire granted later: due by the grant.
    assert_eq!(
        faults_of(&sessions, &[inspect(1600, &["w"], 2)], &[]),
        [OperatorFault::NamedUnwound]
    );
    // The granted token itself is the holder's, named truly.
    assert!(faults_of(&sessions, &[inspect(1600, &["c"], 2)], &[]).is_empty());
}

#[test]
fn faults_that_hold_a_quorums_unwinds_back_excuse_naming_the_attempt() {
    let sessions = with_unwound_attempts();
    let call = [inspect(1400, &["u"], 2)];
    // A reset of two of the three nodes around the unwind: their unwind may
    // be lost, so a quorum may still hold the attempt's keys.
    let two = FaultEvent::new(FaultKind::Reset, vec![0, 1], ms(790), ms(790));
    assert!(faults_of(&sessions, &call, &[two]).is_empty());
    // One node only: the others' unwinds landed, no quorum is left.
    let one = FaultEvent::new(FaultKind::Reset, vec![0], ms(790), ms(790));
    assert_eq!(
        faults_of(&sessions, &call, &[one]),
        [OperatorFault::NamedUnwound]
    );
}

/// A life of `owner`'s hold on `lock:{r}` on `node`, seen 20..`last` ms
/// and gone at `gone` ms (`None`: never seen gone).
fn life(node: usize, owner: &str, last: u64, gone: Option<u64>) -> KeyLife {
    KeyLife {
        node,
        key: "lock:{r}".into(),
        owner: owner.into(),
        first_seen: ms(20),
        last_seen: ms(last),
        last_sent: None,
        age: ms(10),
        left: None,
        gone: gone.map(ms),
        back_after: None,
    }
}

#[test]
fn naming_a_hold_a_quorum_had_dropped_breaks_the_promise_whoever_held_it() {
    // `b` is granted at 610 with no release recorded (an `exec` holder's,
    // or a lost lease): only the nodes can tell.
    let sessions = two_holders();
    let call = [inspect(900, &["b"], 3)];
    let gone_from = |nodes: &[usize]| -> Vec<KeyLife> {
        (0..3)
            .map(|n| life(n, "b", 850, nodes.contains(&n).then_some(870)))
            .collect()
    };
    // Gone from one node of three: a quorum may still hold it.
    assert!(faults_with_keys(&sessions, &call, &[], &gone_from(&[0])).is_empty());
    // Gone from two before the call: at most one node held it.
    assert_eq!(
        faults_with_keys(&sessions, &call, &[], &gone_from(&[0, 1])),
        [OperatorFault::NamedDropped]
    );
    // Gone only after the call began: it may have been held meanwhile.
    let late: Vec<KeyLife> = (0..3).map(|n| life(n, "b", 850, Some(905))).collect();
    assert!(faults_with_keys(&sessions, &call, &[], &late).is_empty());
    // A hold that came back on a node (a later life, open) counts there.
    let mut back = gone_from(&[0, 1]);
    let mut again = life(1, "b", 950, None);
    again.back_after = Some(ms(880));
    back.push(again);
    assert!(faults_with_keys(&sessions, &call, &[], &back).is_empty());
    // A clock jump (or a restart) on a node between its last read without
    // the hold and the call may have brought the hold back there.
    let strobe = FaultEvent::new(FaultKind::Strobe, vec![1], ms(880), ms(890));
    assert!(faults_with_keys(&sessions, &call, &[strobe], &gone_from(&[0, 1])).is_empty());
    let elsewhere_strobe = FaultEvent::new(FaultKind::Strobe, vec![2], ms(880), ms(890));
    assert_eq!(
        faults_with_keys(&sessions, &call, &[elsewhere_strobe], &gone_from(&[0, 1])),
        [OperatorFault::NamedDropped]
    );
    // Another resource's key, or another owner's, says nothing of `b` on `r`.
    let mut elsewhere = gone_from(&[0, 1]);
    for l in &mut elsewhere {
        l.key = "lock:{q}".into();
    }
    assert!(faults_with_keys(&sessions, &call, &[], &elsewhere).is_empty());
}

#[test]
fn an_attempt_still_retried_may_be_back_on_a_quorum_the_audit_saw_it_leave() {
    // A waiting acquire retries one token until it gives up at 2000 ms
    // (a 20-minute soak's control run: `w` was seen gone from every node,
    // then an inspection at 1631 ms named it, truly: a retry had put it
    // back on a quorum between two of the audit's reads).
    let mut waiting = Session::refused(2, "r", ms(600), "contended");
    waiting.ended = Some(ms(2000));
    waiting.tried = vec!["w".into(), "w".into(), "w".into()];
    let gone: Vec<KeyLife> = (0..3).map(|n| life(n, "w", 850, Some(870))).collect();
    let call = [inspect(900, &["w"], 3)];
    assert!(faults_with_keys(&[waiting.clone()], &call, &[], &gone).is_empty());
    // Gone after the tries ended (the unwind), and named later: dropped.
    let after: Vec<KeyLife> = (0..3).map(|n| life(n, "w", 2050, Some(2070))).collect();
    let late_call = [inspect(2100, &["w"], 3)];
    assert_eq!(
        faults_with_keys(&[waiting.clone()], &late_call, &[], &after),
        [OperatorFault::NamedDropped]
    );
    // A granted token's tries end at its grant: gone before it says
    // nothing (the granting write may be what the inspection saw).
    let mut granted = Session::granted(3, "r", "c", ms(600), ms(950), ms(3000));
    granted.tried = vec!["c".into()];
    let before_grant: Vec<KeyLife> = (0..3).map(|n| life(n, "c", 850, Some(870))).collect();
    assert!(
        faults_with_keys(&[granted], &[inspect(960, &["c"], 3)], &[], &before_grant).is_empty()
    );
}

#[test]
fn naming_a_holder_fewer_than_a_quorum_of_its_answers_held_breaks_the_promise() {
    // `a` holds 10..500 on three nodes; an inspection within it.
    let sessions = two_holders();
    let with_reports = |counts: &[(&str, usize)]| {
        let mut call = inspect(100, &["a"], 3);
        if let OperatorAction::Inspect { reported, .. } = &mut call.action {
            let counts = counts
                .iter()
                .map(|(token, count)| ((*token).to_owned(), *count));
            *reported = Some(counts.collect());
        }
        [call]
    };
    // Held by two answers of three: a quorum, a true name.
    assert!(faults_of(&sessions, &with_reports(&[("a", 2)]), &[]).is_empty());
    // By one (the straggler of a release, a partial attempt): not a holder.
    assert_eq!(
        faults_of(&sessions, &with_reports(&[("a", 1), ("b", 2)]), &[]),
        [OperatorFault::NamedMinority]
    );
    // By none of its answers at all.
    assert_eq!(
        faults_of(&sessions, &with_reports(&[("b", 3)]), &[]),
        [OperatorFault::NamedMinority]
    );
    // No answer held anything, yet it named a holder.
    assert_eq!(
        faults_of(&sessions, &with_reports(&[]), &[]),
        [OperatorFault::NamedMinority]
    );
    // A history written before the answers were recorded is not judged so.
    assert!(faults_of(&sessions, &[inspect(100, &["a"], 3)], &[]).is_empty());
}
