use super::*;
use crate::check::audit::premise::unbacked::tests::{backing, ms, session};
use crate::check::by_time;
use crate::evidence::{Backing, OperatorAction, OperatorCall};
use crate::faults::{FaultEvent, FaultKind};

/// `session()` (granted at 10 ms, deadline 900 ms, released at 950 ms)
/// with the votes of nodes 0, 1 and 2 counted.
fn voted() -> Session {
    let mut s = session();
    s.voters = vec![0, 1, 2];
    s
}

fn judge(
    s: &Session,
    backing: &Backing,
    faults: &[FaultEvent],
    operator: &[OperatorCall],
) -> Option<(NodeBacking, Duration)> {
    let ctx = PremiseContext {
        backing,
        faults: by_time::faults(faults),
        operator: by_time::calls(operator),
        clock_off: &[],
    };
    let tracks: Vec<&HoldTrack> = backing.holds.iter().collect();
    unbacked_vote(&ctx, s, &tracks)
}

#[test]
fn voters_that_hold_to_the_deadline_back_their_votes() {
    let held = backing(5, 30, |n, _| (n < 3).then_some(920));
    assert_eq!(judge(&voted(), &held, &[], &[]), None);
}

#[test]
fn a_voter_that_never_stored_the_hold_is_found_while_a_majority_backs_it() {
    // Nodes 0, 1, 3 and 4 hold it: a majority, so the majority premise holds.
    let held = backing(5, 30, |n, _| (n != 2).then_some(920));
    let (node, at) = judge(&voted(), &held, &[], &[]).expect("node 2's vote was never cast");
    assert_eq!(
        node,
        NodeBacking {
            node: 2,
            expires: None
        }
    );
    assert_eq!(at, ms(53), "the first round after the grant");
    // Nodes that did not vote are not judged.
    let mut others = voted();
    others.voters = vec![0, 1, 3];
    assert_eq!(judge(&others, &held, &[], &[]), None);
    // Nor is a session whose lock did not say who voted.
    assert_eq!(judge(&session(), &held, &[], &[]), None);
}

#[test]
fn a_voter_whose_hold_expires_before_the_deadline_or_goes_early_is_found() {
    let short = backing(5, 30, |n, _| Some(if n == 1 { 800 } else { 920 }));
    let (node, _) = judge(&voted(), &short, &[], &[]).expect("expires 100 ms early");
    assert_eq!(
        node,
        NodeBacking {
            node: 1,
            expires: Some(ms(800))
        }
    );
    // Gone from node 0 from round 10 (500 ms) on, before the deadline.
    let gone = backing(5, 30, |n, round| (n != 0 || round < 10).then_some(920));
    let (node, at) = judge(&voted(), &gone, &[], &[]).expect("gone before the deadline");
    assert_eq!((node.node, at), (0, ms(501)));
}

#[test]
fn the_votes_are_judged_from_the_grant_to_the_release_or_deadline() {
    // Stored only from round 1 (50 ms): the round-0 read was sent before the grant.
    let late = backing(5, 30, |n, round| (n < 3 && round >= 1).then_some(920));
    assert_eq!(judge(&voted(), &late, &[], &[]), None);
    // Gone from round 12 (600 ms): after a release at 550 ms it may be.
    let gone = backing(5, 30, |n, round| (round < 12 || n > 2).then_some(920));
    let mut released = voted();
    released.release = Some(ms(550));
    assert_eq!(judge(&released, &gone, &[], &[]), None);
    released.release = Some(ms(650));
    assert!(judge(&released, &gone, &[], &[]).is_some());
}

#[test]
fn a_fault_that_loses_holds_or_a_force_release_excuses_a_voter() {
    let held = backing(5, 30, |n, _| (n != 2).then_some(920));
    let kill = FaultEvent::new(FaultKind::Kill, vec![2], ms(0), ms(5));
    assert_eq!(judge(&voted(), &held, &[kill], &[]), None);
    let elsewhere = FaultEvent::new(FaultKind::Kill, vec![3], ms(0), ms(5));
    assert!(judge(&voted(), &held, &[elsewhere], &[]).is_some());
    let slow = FaultEvent::new(FaultKind::Latency, vec![2], ms(0), ms(900));
    assert!(judge(&voted(), &held, &[slow], &[]).is_some());
    let force = OperatorCall {
        resource: "r".into(),
        start: ms(20),
        end: ms(30),
        action: OperatorAction::ForceRelease { fence: None },
    };
    assert_eq!(judge(&voted(), &held, &[], &[force]), None);
}
