//! The premise rule (`unbacked`): while a client believes it holds, a
//! majority of the nodes back it. Checked from the key audit's rounds
//! (`evidence/audit/backing.rs`), so a broken premise is found when it breaks,
//! before (and whether or not) a second holder comes in to overlap it.
//!
//! A session's premise runs from its grant to the deadline it was given,
//! and from each extension the client saw renewed (from when it returned,
//! `Session::renewed`) to that extension's deadline; it ends at the
//! release (the holder gave the lock back, or gave up on a lease it
//! learnt it had lost). A node backs it at a read when the read shows the
//! owner's hold on the session's lock key expiring no earlier than the
//! deadline then in force (less [`FIXED`] for the reads' ms rounding).
//! That is what a correct lock guarantees: a hold set at `L ≥ start`
//! expires at `L + ttl` node time, at worst `L + ttl / (1 + drift)` real
//! time on a legal fast clock, and the deadline is `start + ttl − elapsed
//! − (ttl × drift + 2 ms)`, earlier still.
//!
//! A round in which a majority of all the nodes were read, inside the
//! premise (sent after the grant, answered before its end), and do not
//! back it is a violation: another client may then take that majority
//! while the holder works. What makes a node unknown, never against:
//!
//! - a read that failed (a node down, paused, half read);
//! - a fault on that node between the session's acquire and the read that
//!   takes holds off a node or ages them ([`LOSES_OR_AGES`]: kill,
//!   restart-majority, forget, clock, strobe, and the cluster faults);
//! - a node whose clock runs outside the drift allowance (`--fast-node`),
//!   whose vote the lock's clock monitoring takes away;
//! - a force-release of the resource begun by the read that may have
//!   found the hold (the owner began to acquire before it ended): every
//!   node.
//!
//! A hold renewed out of the harness's sight (`redquorum exec`'s
//! watchdog, in another process) has no deadline the harness saw: its
//! premise is that a majority holds it, unexpired, at every read while
//! it is used.
//!
//! The read's answer time plus the time left is the latest the hold can
//! expire (the read happened before its answer), so the audit's own lag
//! and a loaded machine only make a node look better backed. A session
//! whose hold the audit never saw on any node (a kind whose hold lives
//! under another key, a permit's slot) is not judged; one of a set
//! (`Session::also`, an all-of hold) whose hold the audit saw under the
//! lock key of another name of the set is, on every name of it.

use std::collections::HashMap;
use std::time::Duration;

use super::super::hold_life::LOSES_OR_AGES;
use super::node_backing::NodeBacking;
use crate::check::by_time::{self, ByTime};
use crate::check::lock_delay::FIXED;
use crate::check::verdict::Evidence;
use crate::check::violation::Violation;
use crate::evidence::{AuditRound, Backing, HoldTrack, OperatorAction, OperatorCall, Session};
use crate::faults::FaultEvent;

/// What the rule reads besides the sessions.
#[derive(Debug, Clone)]
pub(crate) struct PremiseContext<'a> {
    /// The audit's rounds and tracks.
    pub backing: &'a Backing,
    /// The faults injected.
    pub faults: ByTime<'a, FaultEvent>,
    /// The operator's calls.
    pub operator: ByTime<'a, OperatorCall>,
    /// Nodes whose clocks run outside the drift allowance.
    pub clock_off: &'a [usize],
}

/// The first round at which a majority did not back a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unbacked {
    /// When the last of the round's reads that did not back it was answered.
    pub at: Duration,
    /// The deadline then in force.
    pub deadline: Duration,
    /// Whether that deadline was an extension's (else the grant's).
    pub extended: bool,
    /// The nodes that did not back it.
    pub nodes: Vec<NodeBacking>,
}

/// Every audited hold by owner token.
pub(crate) fn tracks_by_owner(backing: &Backing) -> HashMap<&str, Vec<&HoldTrack>> {
    let mut by_owner: HashMap<&str, Vec<&HoldTrack>> = HashMap::new();
    for track in &backing.holds {
        by_owner.entry(&track.owner).or_default().push(track);
    }
    by_owner
}

/// `s`'s audited holds under its resource's lock key, by node; `None`
/// when its kind keeps holds where the audit does not read them (a
/// permit's slot): the audit saw none under the lock key of this resource
/// or of another of its set (an all-of hold is kept under each).
pub(super) fn holds_on_nodes<'a>(
    s: &Session,
    tracks: &[&'a HoldTrack],
) -> Option<HashMap<usize, &'a HoldTrack>> {
    let lock_key = |name: &str| format!("{{{name}}}");
    let suffix = lock_key(&s.resource);
    let mut on_node: HashMap<usize, &HoldTrack> = HashMap::new();
    for track in tracks.iter().filter(|t| t.key.ends_with(&suffix)) {
        on_node.insert(track.node, track);
    }
    let seen = !on_node.is_empty()
        || s.also.iter().any(|name| {
            let other = lock_key(name);
            tracks.iter().any(|t| t.key.ends_with(&other))
        });
    seen.then_some(on_node)
}

/// The deadline in force at `t`, and whether it is an extension's: the
/// last extension known to have returned by `t` (recorded; in histories
/// from before that record, a later step of the client came after it),
/// else the grant's. For a hold renewed out of sight
/// ([`Session::deadline_unseen`]) only `t` itself: the hold must be alive
/// at every read while it is used.
fn deadline_at(s: &Session, t: Duration) -> Option<(Duration, bool)> {
    if s.deadline_unseen {
        return Some((t, false));
    }
    let mut deadline = (s.validity_end?, false);
    for (i, e) in s.extensions.iter().enumerate() {
        let returned_by = s.renewed.get(i).copied().or_else(|| {
            s.extensions
                .get(i + 1)
                .map(|next| next.at)
                .or(s.write_start.filter(|w| *w >= e.at))
                .or(s.release)
        });
        if returned_by.is_some_and(|r| r <= t) {
            deadline = (e.until, true);
        }
    }
    Some(deadline)
}

impl PremiseContext<'_> {
    /// Whether `node` is unknown for `s` at a read answered at `at`.
    pub(super) fn unknown(&self, s: &Session, node: usize, at: Duration) -> bool {
        self.clock_off.contains(&node)
            || self.faults.overlapping(s.start, at).any(|f| {
                LOSES_OR_AGES.contains(&f.kind)
                    && f.nodes.contains(&node)
                    && f.overlaps(s.start, at)
            })
    }

    /// A force-release of `s`'s resource begun by `at` that may have found its hold.
    pub(super) fn forced(&self, s: &Session, at: Duration) -> bool {
        self.operator.overlapping(s.start, at).any(|call| {
            matches!(call.action, OperatorAction::ForceRelease { .. })
                && call.resource == s.resource
                && call.start <= at
                && s.start <= call.end
        })
    }
}

/// The audit rounds, with their index, that may read a premise from
/// `grant` to `last`: from the first answered after the grant to the last
/// before one whose reads were all sent after `last` (a round no node
/// answered says nothing, and does not end it).
pub(super) fn rounds_within(
    backing: &Backing,
    grant: Duration,
    last: Duration,
) -> impl Iterator<Item = (usize, &AuditRound)> {
    let rounds = &backing.rounds;
    // Rounds are in time order: skip those answered before the grant.
    let first = rounds.partition_point(|r| r.reads.iter().flatten().all(|read| read.at < grant));
    rounds
        .iter()
        .enumerate()
        .skip(first)
        .take_while(move |(_, round)| {
            let mut reads = round.reads.iter().flatten().peekable();
            reads.peek().is_none() || !reads.all(|read| read.sent > last)
        })
}

/// The first audit round at which a majority of the nodes did not back
/// `s`, given the audited holds of its owner (`tracks`).
pub(crate) fn unbacked(
    ctx: &PremiseContext<'_>,
    s: &Session,
    tracks: &[&HoldTrack],
) -> Option<Unbacked> {
    let grant = s.grant?;
    let on_node = holds_on_nodes(s, tracks)?;
    let last = s.deadline()?.max(s.validity_end?);
    for (index, round) in rounds_within(ctx.backing, grant, last) {
        let majority = round.reads.len() / 2 + 1;
        let mut against = Vec::new();
        let mut deadline = None;
        for (node, read) in round.reads.iter().enumerate() {
            let Some(read) = read else { continue };
            let Some((due, extended)) = deadline_at(s, read.sent) else {
                continue;
            };
            // Out of sight, the premise lasts the use; else to the deadline.
            let until = if s.deadline_unseen { last } else { due };
            let end = s.release.map_or(until, |release| release.min(until));
            if read.sent < grant || read.at > end || ctx.unknown(s, node, read.at) {
                continue;
            }
            if ctx.forced(s, read.at) {
                return None;
            }
            let shown = on_node
                .get(&node)
                .and_then(|track| track.at_round(index as u32));
            let expires = shown.map(|seen| seen.high);
            if expires.is_none_or(|e| e + FIXED < due) {
                against.push((NodeBacking { node, expires }, read.at));
                deadline = Some((due, extended));
            }
        }
        if against.len() >= majority {
            let (deadline, extended) = deadline?;
            return Some(Unbacked {
                at: against.iter().map(|(_, at)| *at).max()?,
                deadline,
                extended,
                nodes: against.into_iter().map(|(n, _)| n).collect(),
            });
        }
    }
    None
}

/// Each session of `evidence` with an owner that `judge` finds against,
/// given the audited holds of its owner (sessions the audit never saw a
/// hold of are not judged), with what it found.
pub(super) fn judge_each<'e, T>(
    evidence: &Evidence<'e>,
    judge: impl Fn(&PremiseContext<'_>, &Session, &[&HoldTrack]) -> Option<T>,
) -> Vec<(&'e Session, T)> {
    let ctx = PremiseContext {
        backing: evidence.backing,
        faults: by_time::faults(evidence.faults),
        operator: by_time::calls(evidence.operator),
        clock_off: evidence.clock_off,
    };
    let tracks = tracks_by_owner(evidence.backing);
    evidence
        .sessions
        .iter()
        .filter(|s| !s.owner.is_empty())
        .filter_map(|s| {
            let tracks = tracks.get(s.owner.as_str())?;
            judge(&ctx, s, tracks).map(|found| (s, found))
        })
        .collect()
}

/// Every granted session of `evidence` a majority did not back while it
/// believed it held.
pub(crate) fn violations(evidence: &Evidence<'_>) -> Vec<Violation> {
    judge_each(evidence, unbacked)
        .into_iter()
        .map(|(s, broken)| Violation::Unbacked {
            session: Box::new(s.clone()),
            at: broken.at,
            deadline: broken.deadline,
            extended: broken.extended,
            nodes: broken.nodes,
        })
        .collect()
}

#[cfg(test)]
#[path = "unbacked_tests.rs"]
pub(super) mod tests;
