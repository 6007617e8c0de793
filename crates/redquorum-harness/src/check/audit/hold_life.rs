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
//!   the nemesis's clock faults, a hundredth of the TTL); on a node whose
//!   clock runs outside that allowance (`--fast-node`) its time left runs
//!   out early, so a hold gone from it is not judged removed;
//! - a fault on that node that takes holds off it or ages them (kill and
//!   restart-majority lose what the log had not written, and bring back
//!   what it had, a removal included; forget deletes; clock and strobe
//!   jumps end holds early, and a strobe's jump back shows a hash record's
//!   hold its time again), or, on a cluster master, that loses them or
//!   hides them from the audit for a read (a lagging failover loses what
//!   its replica was not sent; a clean one may lose what the old primary
//!   acknowledged in the moment before it learnt it was replaced, and a
//!   read may catch it demoted and resyncing; a migration moves a hold
//!   between two shards the audit reads one after the other);
//! - for a waiting writer, a fault on that node that held commands back
//!   while its acquire was out (an earlier attempt's unwind, or its set
//!   again, may land when the fault heals, up to the slack after it; one
//!   attempt's commands reach a node in order, so other kinds need none);
//! - an operator's force-release of the resource begun before the hold
//!   was gone, if the owner began to acquire before the call ended (it
//!   removes the holds it finds, by design, also late on a node that was
//!   away; a hold taken after it is not its to remove).
//! - for a hold handed over as a lease ticket, its return while an
//!   adoption of it that failed was under way: a failed adoption moves
//!   the hold back to its owner where it had moved it (the ticket stays
//!   good for a later adoption).
//!
//! Holds that share a record (readers, permits, a reentrant owner's holds)
//! are each judged by their own token: one's release leaves the others.

use std::collections::HashMap;
use std::time::Duration;

use super::orphan::path_lag::holds_back_write;
use crate::check::by_time::ByTime;
use crate::check::lock_delay::{DRIFT, FIXED};
use crate::evidence::{KeyLife, OperatorAction, OperatorCall, RuntimeLag, Session};
use crate::faults::{FaultEvent, FaultKind};

/// What the rules read besides the holds and their owners.
#[derive(Debug, Clone)]
pub(crate) struct HoldContext<'a> {
    /// The lock's TTL (a hold's time left is the TTL less its age).
    pub ttl: Duration,
    /// The audit's slack: how long after a fault heals a command it held
    /// back may still land.
    pub slack: Duration,
    /// The faults injected.
    pub faults: ByTime<'a, FaultEvent>,
    /// The operator's calls.
    pub operator: ByTime<'a, OperatorCall>,
    /// Nodes whose clocks run outside the drift allowance.
    pub clock_off: &'a [usize],
    /// The failed adoptions of each owner's lease ticket (start, end).
    pub moves_back: &'a MovesBack<'a>,
    /// When client runtimes and fault proxies woke late: a move back held
    /// in a starved proxy lands when it wakes (`orphan/path_lag.rs`).
    pub lags: &'a [RuntimeLag],
}

/// The failed adoptions of each owner's lease ticket (start, end, the
/// adopter's client group), by the owner: each moved the hold back where
/// it had moved it.
pub(crate) type MovesBack<'a> = HashMap<&'a str, Vec<(Duration, Duration, usize)>>;

/// The failed adoptions in `sessions`, by the owner whose ticket they took.
pub(crate) fn moves_back(sessions: &[Session]) -> MovesBack<'_> {
    let mut by: MovesBack<'_> = HashMap::new();
    for s in sessions.iter().filter(|s| s.grant.is_none()) {
        if let Some(from) = &s.adopted_from {
            let end = s.ended.unwrap_or(s.start);
            by.entry(from.as_str())
                .or_default()
                .push((s.start, end, s.group));
        }
    }
    by
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
        (self.faults.overlapping(from, until))
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
        self.faults.overlapping(owner.start, grant).any(|f| {
            f.kind.delays_commands()
                && (f.nodes.is_empty() || f.nodes.contains(&node))
                && f.group.is_none_or(|g| g == owner.group)
                && f.overlaps(owner.start, grant)
                && f.end + self.slack >= at
        })
    }

    /// A failed adoption of `owner`'s ticket under way (within the slack)
    /// between the read at `absent` that missed the hold on `node` and its
    /// return at `back`: it moved the hold back. Its move back to `node`
    /// may land later, by the slack after a fault there that held commands
    /// or their answers back while it ran (for the adopter's group) healed,
    /// or after the adopter's group's proxy to `node`, held by a starved
    /// machine while it ran, woke (`path_lag::holds_back_write`).
    fn moved_back(&self, owner: &Session, node: usize, absent: Duration, back: Duration) -> bool {
        let held_until = |(start, end, group): (Duration, Duration, usize)| {
            (self.faults.overlapping(start, end))
                .filter(|f| f.kind.delays_commands() || f.held_answers.is_some())
                .filter(|f| f.nodes.is_empty() || f.nodes.contains(&node))
                .filter(|f| f.group.is_none_or(|g| g == group))
                .map(|f| f.end + f.held_answers.unwrap_or_default())
                .fold(end, Duration::max)
        };
        let in_a_held_proxy = |(start, end, group): (Duration, Duration, usize)| {
            holds_back_write(self.lags, node, Some(group), (start, end), back, self.slack)
        };
        (self.moves_back.get(owner.owner.as_str())).is_some_and(|spans| {
            spans.iter().any(|&span| {
                span.0 <= back + self.slack
                    && (held_until(span) + self.slack >= absent || in_a_held_proxy(span))
            })
        })
    }

    /// A force-release of the hold's resource (the owner's, or any named
    /// in the key: an all-of holds its neighbour too) begun by `until` that
    /// may have found the hold: the owner began to acquire before the call
    /// ended. Its removal may land any time after it began (on a node it
    /// could not reach then, when that node comes back), but it removes
    /// only what it found: a hold whose acquire began after it is not its
    /// to take.
    fn forced(&self, life: &KeyLife, owner: &Session, until: Duration) -> bool {
        self.operator.overlapping(owner.start, until).any(|call| {
            matches!(call.action, OperatorAction::ForceRelease { .. })
                && (call.resource == owner.resource
                    || life.key.contains(&format!("{{{}}}", call.resource)))
                && call.start <= until
                && owner.start <= call.end
        })
    }
}

/// Faults that take holds off a node, or age them, or bring them back, or
/// (the last three, on cluster masters only) lose them or hide them from a
/// read; the inspection rule (`operator.rs`) excuses the same.
pub(crate) const LOSES_OR_AGES: [FaultKind; 8] = [
    FaultKind::Kill,
    FaultKind::RestartMajority,
    FaultKind::Forget,
    FaultKind::Clock,
    FaultKind::Strobe,
    FaultKind::Migrate,
    FaultKind::Failover,
    FaultKind::LaggingFailover,
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
    // Its PTTL as read when the audit kept it (older histories: from the age),
    // counted from when that read was sent: the node may have run it long
    // before its answer came (a slow node, proxy or audit), so the key may
    // expire that much earlier than the answer's time says.
    let left = (life.left).unwrap_or_else(|| ctx.ttl.saturating_sub(life.age));
    let read_run = life.last_sent.unwrap_or(life.last_seen);
    let expires_from = (read_run + left).saturating_sub(early + ctx.clock_error());
    if gone >= expires_from {
        return false;
    }
    // A fast clock (outside the drift allowance) runs its holds' time
    // left down early; the lock refuses such a node's votes.
    !(ctx.clock_off.contains(&life.node)
        || ctx.node_fault(&LOSES_OR_AGES, life.node, seen_from, gone)
        || ctx.held_back_acquire(owner, life.node, seen_from)
        || ctx.forced(life, owner, gone))
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
        || ctx.held_back_acquire(owner, life.node, absent)
        || ctx.moved_back(owner, life.node, absent, life.first_seen))
}

#[cfg(test)]
#[path = "hold_life_tests/removed.rs"]
mod tests;

#[cfg(test)]
#[path = "hold_life_tests/came_back.rs"]
mod back_tests;
