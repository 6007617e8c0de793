use super::*;
use crate::check::by_time;
use crate::evidence::Dropped;

pub(super) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// TTL 2 s, slack 1 s (the torture's defaults).
pub(super) fn ctx<'a>(faults: &'a [FaultEvent], operator: &'a [OperatorCall]) -> HoldContext<'a> {
    static NO_MOVES_BACK: std::sync::LazyLock<MovesBack<'static>> =
        std::sync::LazyLock::new(HashMap::new);
    HoldContext {
        ttl: ms(2000),
        slack: ms(1000),
        faults: by_time::faults(faults),
        operator: by_time::calls(operator),
        clock_off: &[],
        moves_back: &NO_MOVES_BACK,
        lags: &[],
    }
}

/// `owner`'s hold on `node`, seen until `last_seen` (set at `set`),
/// first missed at `gone`.
pub(super) fn life(
    node: usize,
    owner: &str,
    set: u64,
    last_seen: u64,
    gone: Option<u64>,
) -> KeyLife {
    KeyLife {
        node,
        key: "lock:{r}".into(),
        owner: owner.into(),
        first_seen: ms(set + 500),
        last_seen: ms(last_seen),
        last_sent: None,
        age: ms(last_seen - set),
        gone: gone.map(ms),
        left: None,
        back_after: None,
    }
}

/// A to-deadline holder granted at 100 (hold set at 50), valid until
/// 1900, released at 1898.
pub(super) fn holder(owner: &str) -> Session {
    let mut s = Session::granted(0, "r", owner, ms(0), ms(100), ms(1900));
    s.release = Some(ms(1898));
    s
}

#[test]
fn a_live_hold_gone_before_its_release_and_its_ttl_is_removed() {
    let a = holder("a");
    // Seen at 1000 with 1050 ms left, gone by 1100: nobody gave it back.
    assert!(removed(
        &ctx(&[], &[]),
        &life(0, "a", 50, 1000, Some(1100)),
        &a
    ));
    // Still there when the audit stopped: nothing to say.
    assert!(!removed(&ctx(&[], &[]), &life(0, "a", 50, 1000, None), &a));
}

/// A fast clock (`--fast-node`) runs its holds' time left down early.
#[test]
fn a_hold_gone_early_from_a_node_with_a_fast_clock_was_not_removed() {
    let (a, gone_early) = (holder("a"), life(0, "a", 50, 1000, Some(1100)));
    let on = |clock_off| {
        removed(
            &HoldContext {
                clock_off,
                ..ctx(&[], &[])
            },
            &gone_early,
            &a,
        )
    };
    assert!(!on(&[0]) && on(&[1]));
}

#[test]
fn the_owners_release_and_a_dropped_release_excuse_it() {
    let mut a = holder("a");
    a.release = Some(ms(1050));
    assert!(!removed(
        &ctx(&[], &[]),
        &life(0, "a", 50, 1000, Some(1100)),
        &a
    ));
    a.dropped = Some(Dropped::Release); // released in the background from 1050
    assert!(!removed(
        &ctx(&[], &[]),
        &life(0, "a", 50, 1000, Some(1100)),
        &a
    ));
    // A release that starts after the hold was gone explains nothing.
    a.release = Some(ms(1150));
    assert!(removed(
        &ctx(&[], &[]),
        &life(0, "a", 50, 1000, Some(1100)),
        &a
    ));
}

#[test]
fn an_earlier_attempts_unwind_before_the_grant_is_not_judged() {
    // A waiting writer's first attempt set its hold at 0 and unwound it;
    // its later attempt was granted at 900 with the same token.
    let mut w = Session::granted(0, "r", "w", ms(0), ms(900), ms(2700));
    w.release = Some(ms(2600));
    assert!(!removed(
        &ctx(&[], &[]),
        &life(1, "w", 0, 600, Some(700)),
        &w
    ));
    // Seen only within the sighting allowance after the grant: not judged either.
    assert!(!removed(
        &ctx(&[], &[]),
        &life(1, "w", 0, 1100, Some(1200)),
        &w
    ));
    assert!(removed(
        &ctx(&[], &[]),
        &life(1, "w", 0, 1200, Some(1300)),
        &w
    ));
    // Another kind's attempts each draw a token: its hold seen once
    // after the grant is the granted attempt's.
    w.kind = "plain".into();
    assert!(removed(
        &ctx(&[], &[]),
        &life(1, "w", 0, 1000, Some(1100)),
        &w
    ));
    assert!(!removed(
        &ctx(&[], &[]),
        &life(1, "w", 0, 900, Some(1000)),
        &w
    ));
}

#[test]
fn a_dropped_or_refused_attempt_has_no_granted_owner_to_judge() {
    // The checker only judges holds whose token a granted session
    // recorded; a dropped acquire records none (see `check_hold_lives`).
    let refused = Session::refused(0, "r", ms(0), "dropped");
    assert!(!removed(
        &ctx(&[], &[]),
        &life(0, "", 0, 600, Some(700)),
        &refused
    ));
}

#[test]
fn ttl_expiry_within_the_clock_error_and_the_sighting_excuses_it() {
    let mut a = holder("a");
    a.release = Some(ms(5000)); // paused far past its deadline
    // Set at 50, expires at 2050: gone by 2060 is its TTL, and so is
    // gone by 1800 (a fast clock, a late sighting: 2050 − 250 − 42).
    assert!(!removed(
        &ctx(&[], &[]),
        &life(0, "a", 50, 2000, Some(2060)),
        &a
    ));
    assert!(!removed(
        &ctx(&[], &[]),
        &life(0, "a", 50, 1750, Some(1800)),
        &a
    ));
    assert!(removed(
        &ctx(&[], &[]),
        &life(0, "a", 50, 1650, Some(1700)),
        &a
    ));
}

#[test]
fn a_fault_that_loses_or_ages_holds_on_that_node_excuses_it() {
    let a = holder("a");
    let gone = life(2, "a", 50, 1000, Some(1300));
    for kind in LOSES_OR_AGES {
        let fault = [FaultEvent::new(kind, vec![2], ms(1100), ms(1200))];
        assert!(!removed(&ctx(&fault, &[]), &gone, &a), "{kind:?}");
        let elsewhere = [FaultEvent::new(kind, vec![3], ms(1100), ms(1200))];
        assert!(removed(&ctx(&elsewhere, &[]), &gone, &a), "{kind:?}");
    }
    // A stall while it held only delays commands: no excuse (a
    // script flush deletes nothing either).
    for kind in [FaultKind::Stall, FaultKind::ScriptFlush, FaultKind::Latency] {
        let fault = [FaultEvent::new(kind, vec![2], ms(1100), ms(1200))];
        assert!(removed(&ctx(&fault, &[]), &gone, &a), "{kind:?}");
    }
}

#[test]
fn a_fault_holding_the_owners_acquire_back_excuses_what_lands_at_its_heal() {
    let a = holder("a");
    let stall_during_acquire = [FaultEvent::new(FaultKind::Stall, vec![2], ms(20), ms(300))];
    assert!(!removed(
        &ctx(&stall_during_acquire, &[]),
        &life(2, "a", 50, 1000, Some(1100)),
        &a
    ));
    // Healed more than the slack before: nothing of the acquire is left to land.
    assert!(removed(
        &ctx(&stall_during_acquire, &[]),
        &life(2, "a", 50, 1600, Some(1650)),
        &a
    ));
    // Another group's partition held nothing of this owner's back.
    let mut other_group = FaultEvent::new(FaultKind::Partition, vec![2], ms(20), ms(400));
    other_group.group = Some(3);
    assert!(removed(
        &ctx(&[other_group], &[]),
        &life(2, "a", 50, 1000, Some(1100)),
        &a
    ));
    // A plain lock's one attempt sends its token once: what the stall
    // held back of it cannot remove its own hold.
    let mut plain = holder("a");
    plain.kind = "plain".into();
    assert!(removed(
        &ctx(&stall_during_acquire, &[]),
        &life(2, "a", 50, 1000, Some(1100)),
        &plain
    ));
}

#[test]
fn an_operators_force_release_of_the_resource_excuses_it() {
    let a = holder("a");
    let force = |resource: &str| OperatorCall {
        resource: resource.into(),
        start: ms(1020),
        end: ms(1040),
        action: OperatorAction::ForceRelease { fence: Some(9) },
    };
    let gone = life(0, "a", 50, 1000, Some(1100));
    assert!(!removed(&ctx(&[], &[force("r")]), &gone, &a));
    assert!(removed(&ctx(&[], &[force("q")]), &gone, &a));
    // An all-of holder's neighbour is in the key, not the session.
    let mut neighbour = gone.clone();
    neighbour.key = "lock:{q}".into();
    assert!(!removed(&ctx(&[], &[force("q")]), &neighbour, &a));
    // An inspection removes nothing.
    let inspect = OperatorCall {
        action: OperatorAction::Inspect {
            holders: vec![],
            answered: 5,
            reported: None,
        },
        ..force("r")
    };
    assert!(removed(&ctx(&[], &[inspect]), &gone, &a));
}

#[test]
fn a_force_release_excuses_only_the_holds_it_may_have_found() {
    // The call ran from 20 to 40; the hold was gone by 1100.
    let call = OperatorCall {
        resource: "r".into(),
        start: ms(20),
        end: ms(40),
        action: OperatorAction::ForceRelease { fence: None },
    };
    let gone = life(0, "a", 50, 1000, Some(1100));
    // The owner began to acquire at 0, before the call ended: the call may
    // have read its hold and removed it late, on a node that was away.
    assert!(!removed(
        &ctx(&[], std::slice::from_ref(&call)),
        &gone,
        &holder("a")
    ));
    // An owner that began at 45, after the call: not the call's to remove.
    let mut later = holder("a");
    later.start = ms(45);
    assert!(removed(
        &ctx(&[], std::slice::from_ref(&call)),
        &gone,
        &later
    ));
    // A call begun after the hold was gone removed nothing of it.
    let after = OperatorCall {
        start: ms(1200),
        end: ms(1210),
        ..call
    };
    assert!(removed(&ctx(&[], &[after]), &gone, &holder("a")));
}

#[test]
fn a_sharers_release_leaves_the_other_holds_judged_on_their_own() {
    // Two readers on one record: a gives its hold back at 1050, b holds on.
    let mut a = holder("a");
    a.release = Some(ms(1050));
    let b = holder("b");
    let a_gone = life(0, "a", 50, 1000, Some(1100));
    assert!(!removed(&ctx(&[], &[]), &a_gone, &a));
    // b's hold on the same node stayed: its life is still open.
    assert!(!removed(&ctx(&[], &[]), &life(0, "b", 50, 1800, None), &b));
    // Had a's release taken b's hold too, that is b's hold removed.
    assert!(removed(
        &ctx(&[], &[]),
        &life(0, "b", 50, 1000, Some(1100)),
        &b
    ));
}
