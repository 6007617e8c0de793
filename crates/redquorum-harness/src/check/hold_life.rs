//! A hold's life on each node, as the key audit saw it, against its owner's
//! session: nobody but its owner may take a live hold off a node, and a
//! hold that has gone from a node does not come back.
//!
//! - **Removed** (`hold-removed`): a granted holder's hold, seen on a node
//!   after its grant, was gone from it (the first audit read that no longer
//!   showed it) before its owner began to give it back (its release; a
//!   dropped release's background release counts, since the release time is
//!   taken first) and before its TTL, as the hold's time left at its last
//!   sighting says. A release that deletes whoever's hold (no owner check),
//!   an unwind or a stale release landing on the next holder's key, all
//!   show here, whether or not a third holder then overlaps.
//! - **Came back** (`hold-came-back`): a hold seen on a node again after a
//!   read of that node, taken once its grant was decided, had not shown
//!   it. Only an acquire sets a hold where there is none, and a holder's
//!   acquire has returned by its grant; an extension, a release or a
//!   fencing write-back that sets it again where it had gone (a late
//!   extension landing after the hold expired there) revives a hold that
//!   another holder may have taken meanwhile.
//!
//! What excuses either, all on the history's clock:
//!
//! - the audit's sampling: a read's time is taken after its reply, so a
//!   sighting may be up to [`sighting`] older than it says; a hold is
//!   judged only once seen (or missed) after its grant, and, for a waiting
//!   writer, which keeps its token across attempts (an earlier attempt's
//!   hold may be unwound, and set again), that long after it;
//! - the TTL: a hold may be gone at its last sighting's time left, less
//!   the clock error the lock allows (its drift factor and fixed 2 ms, and
//!   the nemesis's clock faults, a hundredth of the TTL);
//! - a fault on that node that takes holds off it or ages them (kill and
//!   restart-majority lose what the log had not written, and bring back
//!   what it had, a removal included; forget deletes; clock and strobe
//!   jumps end holds early, and a strobe's jump back shows a hash record's
//!   hold its time again);
//! - for a waiting writer, a fault on that node that held commands back
//!   while its acquire was out (an earlier attempt's unwind, or its set
//!   again, may land when the fault heals, up to the slack after it; one
//!   attempt's commands reach a node in order, so other kinds need none);
//! - an operator's force-release of the resource (it removes holds by
//!   design).
//!
//! Holds that share a record (readers, permits, a reentrant owner's holds)
//! are each judged by their own token: one's release leaves the others.

use std::time::Duration;

use super::lock_delay::{DRIFT, FIXED};
use crate::evidence::{KeyLife, OperatorAction, OperatorCall, Session};
use crate::faults::{FaultEvent, FaultKind};

/// What the rules read besides the holds and their owners.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HoldContext<'a> {
    /// The lock's TTL (a hold's time left is the TTL less its age).
    pub ttl: Duration,
    /// The audit's slack: how long after a fault heals a command it held
    /// back may still land.
    pub slack: Duration,
    /// The faults injected.
    pub faults: &'a [FaultEvent],
    /// The operator's calls.
    pub operator: &'a [OperatorCall],
}

/// How much older than its recorded time an audit read may be: its time
/// is taken after the reply, and the read may wait up to its 100 ms
/// timeout (more on a loaded machine) before it; a quarter of the slack
/// (250 ms at the default 2 s TTL).
pub(crate) fn sighting(slack: Duration) -> Duration {
    slack / 4
}

/// How long after the grant a sighting may still be of an earlier attempt
/// of the same token: `allowance` for a waiting writer, which keeps its
/// token across attempts (and for a session whose kind was not recorded);
/// none for every other kind, whose attempts each draw a token, so that
/// any hold of it seen after the grant is the granted attempt's.
fn reuse(owner: &Session, allowance: Duration) -> Duration {
    if reuses_token(owner) {
        allowance
    } else {
        Duration::ZERO
    }
}

/// Whether `owner`'s acquire may have sent its token in several attempts:
/// a waiting writer's (or a session whose kind was not recorded). Only
/// then can an attempt's unwind, or a set again, follow another hold of
/// the same token on a node; one attempt's commands reach a node in order.
fn reuses_token(owner: &Session) -> bool {
    owner.kind.is_empty() || owner.kind == "write"
}

impl HoldContext<'_> {
    /// The clock error a hold's expiry may show: the drift factor and fixed
    /// term, and the nemesis's clock faults (a hundredth of the TTL).
    fn clock_error(&self) -> Duration {
        self.ttl.mul_f64(DRIFT) + FIXED + self.ttl / 100
    }

    /// A fault of one of `kinds` on `node` between `from` and `until`.
    fn node_fault(
        &self,
        kinds: &[FaultKind],
        node: usize,
        from: Duration,
        until: Duration,
    ) -> bool {
        self.faults
            .iter()
            .any(|f| kinds.contains(&f.kind) && f.nodes.contains(&node) && f.overlaps(from, until))
    }

    /// A fault that held commands back on `node` (for `owner`'s group, when
    /// it hit one group) while `owner`'s acquire, one that may send its
    /// token in several attempts, was out, healed less than the slack
    /// before `at`.
    fn held_back_acquire(&self, owner: &Session, node: usize, at: Duration) -> bool {
        let Some(grant) = owner.grant.filter(|_| reuses_token(owner)) else {
            return false;
        };
        self.faults.iter().any(|f| {
            f.kind.delays_commands()
                && (f.nodes.is_empty() || f.nodes.contains(&node))
                && f.group.is_none_or(|g| g == owner.group)
                && f.overlaps(owner.start, grant)
                && f.end + self.slack >= at
        })
    }

    /// A force-release of the hold's resource (the owner's, or any named
    /// in the key: an all-of holds its neighbour too) between `from` and
    /// `until`, or whose commands could still land then.
    fn forced(&self, life: &KeyLife, owner: &Session, from: Duration, until: Duration) -> bool {
        self.operator.iter().any(|call| {
            matches!(call.action, OperatorAction::ForceRelease { .. })
                && (call.resource == owner.resource
                    || life.key.contains(&format!("{{{}}}", call.resource)))
                && call.start <= until
                && call.end + self.slack >= from
        })
    }
}

/// Faults that take holds off a node, or age them, or bring them back.
const LOSES_OR_AGES: [FaultKind; 5] = [
    FaultKind::Kill,
    FaultKind::RestartMajority,
    FaultKind::Forget,
    FaultKind::Clock,
    FaultKind::Strobe,
];

/// Whether `life`'s hold was taken off its node by someone else while
/// `owner` held it: gone before the owner's release and before its TTL,
/// with nothing above to excuse it.
pub(crate) fn removed(ctx: &HoldContext<'_>, life: &KeyLife, owner: &Session) -> bool {
    let (Some(gone), Some(grant)) = (life.gone, owner.grant) else {
        return false;
    };
    let early = sighting(ctx.slack);
    let seen_from = life.last_seen.saturating_sub(early);
    if life.last_seen.saturating_sub(reuse(owner, early)) <= grant {
        return false;
    }
    if owner.release.is_some_and(|release| release <= gone) {
        return false;
    }
    let left = ctx.ttl.saturating_sub(life.age);
    let expires_from = (life.last_seen + left).saturating_sub(early + ctx.clock_error());
    if gone >= expires_from {
        return false;
    }
    !(ctx.node_fault(&LOSES_OR_AGES, life.node, seen_from, gone)
        || ctx.held_back_acquire(owner, life.node, seen_from)
        || ctx.forced(life, owner, seen_from, gone))
}

/// Whether `life` is `owner`'s hold come back on its node after a read,
/// taken once the grant was decided, had not shown it, with nothing above
/// to excuse it.
pub(crate) fn came_back(ctx: &HoldContext<'_>, life: &KeyLife, owner: &Session) -> bool {
    let (Some(absent), Some(grant)) = (life.back_after, owner.grant) else {
        return false;
    };
    if absent <= grant + reuse(owner, sighting(ctx.slack)) {
        return false;
    }
    let from = absent.saturating_sub(ctx.slack);
    !(ctx.node_fault(&LOSES_OR_AGES, life.node, from, life.first_seen)
        || ctx.held_back_acquire(owner, life.node, absent))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Dropped;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// TTL 2 s, slack 1 s (the torture's defaults).
    fn ctx<'a>(faults: &'a [FaultEvent], operator: &'a [OperatorCall]) -> HoldContext<'a> {
        HoldContext {
            ttl: ms(2000),
            slack: ms(1000),
            faults,
            operator,
        }
    }

    /// `owner`'s hold on `node`, seen until `last_seen` (set at `set`),
    /// first missed at `gone`.
    fn life(node: usize, owner: &str, set: u64, last_seen: u64, gone: Option<u64>) -> KeyLife {
        KeyLife {
            node,
            key: "lock:{r}".into(),
            owner: owner.into(),
            first_seen: ms(set + 500),
            last_seen: ms(last_seen),
            age: ms(last_seen - set),
            gone: gone.map(ms),
            back_after: None,
        }
    }

    /// A to-deadline holder granted at 100 (hold set at 50), valid until
    /// 1900, released at 1898.
    fn holder(owner: &str) -> Session {
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
            },
            ..force("r")
        };
        assert!(removed(&ctx(&[], &[inspect]), &gone, &a));
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

    /// `owner`'s hold back on `node` at `back`, after a read at `absent`
    /// that did not show it.
    fn back(node: usize, owner: &str, absent: u64, back: u64) -> KeyLife {
        KeyLife {
            first_seen: ms(back),
            last_seen: ms(back + 100),
            age: ms(50),
            back_after: Some(ms(absent)),
            gone: None,
            ..life(node, owner, 0, 500, None)
        }
    }

    /// A renewing holder granted at 100, extended at 1300 to 3200, released at 3100.
    fn renewing() -> Session {
        let mut s = Session::granted(0, "r", "a", ms(0), ms(100), ms(1900));
        s.extensions = vec![crate::Extension {
            at: ms(1300),
            until: ms(3200),
        }];
        s.release = Some(ms(3100));
        s
    }

    #[test]
    fn a_hold_back_on_a_node_after_it_had_gone_there_is_caught() {
        // Its hold expired on node 0 (the extension was late there) and the
        // late extension set it again.
        let a = renewing();
        assert!(came_back(&ctx(&[], &[]), &back(0, "a", 2050, 2100), &a));
        // Even after its release: nothing sets a released hold again.
        assert!(came_back(&ctx(&[], &[]), &back(0, "a", 3150, 3200), &a));
        // A first life is not a return.
        assert!(!came_back(
            &ctx(&[], &[]),
            &life(0, "a", 50, 1000, None),
            &a
        ));
    }

    #[test]
    fn an_acquire_not_yet_decided_may_set_its_hold_again() {
        // A waiting writer's attempts (one token) set, unwind and set again
        // until the grant at 900; the sighting allowance covers a read
        // taken before the grant but timed after it.
        let mut w = Session::granted(0, "r", "w", ms(0), ms(900), ms(2700));
        w.release = Some(ms(2600));
        assert!(!came_back(&ctx(&[], &[]), &back(0, "w", 700, 800), &w));
        assert!(!came_back(&ctx(&[], &[]), &back(0, "w", 1100, 1150), &w));
        assert!(came_back(&ctx(&[], &[]), &back(0, "w", 1200, 1250), &w));
        w.kind = "plain".into();
        assert!(came_back(&ctx(&[], &[]), &back(0, "w", 1000, 1050), &w));
    }

    #[test]
    fn the_acquires_held_back_set_landing_at_the_heal_is_excused() {
        let a = renewing();
        let stall = [FaultEvent::new(FaultKind::Stall, vec![0], ms(50), ms(1400))];
        assert!(!came_back(&ctx(&stall, &[]), &back(0, "a", 1450, 1500), &a));
        // A plain lock's one attempt sets its hold once.
        let mut plain = renewing();
        plain.kind = "plain".into();
        assert!(came_back(
            &ctx(&stall, &[]),
            &back(0, "a", 1450, 1500),
            &plain
        ));
        // A stall that began after the grant held back an extension, not
        // the acquire: that is the revival this rule is for.
        let late = [FaultEvent::new(
            FaultKind::Stall,
            vec![0],
            ms(1300),
            ms(2060),
        )];
        assert!(came_back(&ctx(&late, &[]), &back(0, "a", 2050, 2100), &a));
    }

    #[test]
    fn a_restart_or_a_clock_jump_on_that_node_excuses_a_return() {
        let a = renewing();
        let returned = back(0, "a", 2050, 2100);
        for kind in LOSES_OR_AGES {
            let fault = [FaultEvent::new(kind, vec![0], ms(1990), ms(2000))];
            assert!(!came_back(&ctx(&fault, &[]), &returned, &a), "{kind:?}");
            let elsewhere = [FaultEvent::new(kind, vec![1], ms(1990), ms(2000))];
            assert!(came_back(&ctx(&elsewhere, &[]), &returned, &a), "{kind:?}");
        }
    }
}
