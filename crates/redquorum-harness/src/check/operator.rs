//! An operator's calls during a run, and what the checker holds them to.
//!
//! Beside the clients, an operator inspects resources (who holds them, as a
//! quorum of nodes reports) and force-releases them (ousting the holder,
//! with a fencing token for storage to refuse it by). Each call is recorded
//! with its interval on the history's clock ([`OperatorLog`](crate::OperatorLog)); the checker
//! then requires, per resource:
//!
//! - an inspection names only holders that a quorum of its own answers held
//!   (the per-node answers it names them from: a slip in its counting);
//! - an inspection never names a holder whose release a quorum had
//!   confirmed before the inspection began (a long-gone holder), nor an
//!   attempt never granted whose unwind was due more than half the slack
//!   before the inspection began, unless faults that could hold that unwind
//!   back struck a quorum of the nodes (an unwound attempt: the lock tells
//!   the history each attempt's token, [`Session::tried`]);
//! - an inspection that every node answered, made wholly inside a holder's
//!   exclusive window, names that holder, unless a fault that can lose or
//!   age a hold early (kill, forget, clock, strobe) or a force-release
//!   touched the resource meanwhile (a missed holder);
//! - a force-release's token is above the token of every holder granted
//!   before it began, and below the token of every holder whose acquire
//!   began after it ended.
//!
//! A force-release breaks exclusion by design: two holders overlap when a
//! force-release ousted the first before the second was granted, and the
//! overlap check excuses exactly those pairs (`forced.rs`: also when a
//! fault held the force-release's removal back past the call's end); when
//! one of them holds without a token, no fencing keeps its write out, and
//! the update it loses is excused too.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use super::audit::excuse::{Sender, explains};
use super::audit::hold_life::LOSES_OR_AGES;
use super::audit::token_backing::issued_at;
use crate::evidence::{KeyLife, OperatorAction, OperatorCall, Session};
use crate::faults::FaultEvent;

/// A broken promise of an operator call ([`crate::Violation::Operator`]).
///
/// # Examples
///
/// ```
/// assert_eq!(redquorum_harness::OperatorFault::Missed.to_string(), "did not name a certain holder");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OperatorFault {
    /// An inspection named a holder whose release a quorum had confirmed.
    LongGone,
    /// An inspection named a hold the key audit saw gone from more nodes
    /// than a quorum can spare before the inspection began.
    NamedDropped,
    /// An inspection named a holder that fewer than a quorum of its own
    /// answers held.
    NamedMinority,
    /// An inspection did not name a holder that certainly held.
    Missed,
    /// An inspection named an attempt, never granted, that the lock had
    /// unwound before the inspection began, while too few nodes were under
    /// a fault that could hold the unwind back to leave a quorum holding it.
    NamedUnwound,
    /// A force-release's token is not above an earlier holder's token.
    FenceNotAbove,
    /// A later holder's token is not above a force-release's token.
    FenceNotBelow,
}

impl fmt::Display for OperatorFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OperatorFault::LongGone => "named a holder whose release a quorum had confirmed",
            OperatorFault::NamedDropped => {
                "named a hold that too many nodes had dropped to leave a quorum"
            }
            OperatorFault::NamedMinority => {
                "named a holder that fewer than a quorum of its own answers held"
            }
            OperatorFault::Missed => "did not name a certain holder",
            OperatorFault::NamedUnwound => "named an attempt the lock had unwound",
            OperatorFault::FenceNotAbove => {
                "returned a token not above the token of a holder granted before it"
            }
            OperatorFault::FenceNotBelow => {
                "returned a token not below the token of a holder that began after it"
            }
        })
    }
}

/// Every session of the run by owner token.
type ByToken<'a> = HashMap<&'a str, &'a Session>;

/// The operator calls on `resource` that break a promise, each with the
/// session it concerns. `sessions` are the resource's granted sessions in
/// grant order; `owners` every granted session of the run by owner token (a
/// multi-lock holds resources other than the one it is recorded under),
/// `tried` every session by the tokens of its attempts not granted; the
/// key audit's lives of the resource's holds; the run's faults and the
/// checker's slack.
pub(crate) fn broken_promises<'a>(
    resource: &str,
    sessions: &[&'a Session],
    (owners, tried): (&ByToken<'a>, &ByToken<'a>),
    calls: &'a [OperatorCall],
    (nodes, keys): (usize, &[KeyLife]),
    (faults, slack): (&[FaultEvent], Duration),
) -> Vec<(&'a OperatorCall, &'a Session, OperatorFault)> {
    let mut broken = Vec::new();
    let resource_key = format!("{{{resource}}}");
    let mut lives: HashMap<&str, Vec<&KeyLife>> = HashMap::new();
    for life in keys.iter().filter(|l| l.key.contains(&resource_key)) {
        lives.entry(life.owner.as_str()).or_default().push(life);
    }
    // Each session's grant and last window end, so an inspection looks only
    // at the sessions it may lie inside (a long run has many of both).
    let spans: Vec<(Duration, Duration, &Session)> = sessions
        .iter()
        .filter_map(|s| {
            let windows = s.windows();
            let until = windows.iter().map(|w| w.1).max()?;
            Some((s.grant?, until, *s))
        })
        .collect();
    for call in calls.iter().filter(|c| c.resource == resource) {
        match &call.action {
            OperatorAction::Inspect {
                holders,
                answered,
                reported,
            } => {
                for token in holders {
                    let session = owners.get(token.as_str()).or(tried.get(token.as_str()));
                    // Its own answers: fewer than a quorum held the token.
                    let held_by = reported
                        .as_ref()
                        .map(|reported| reported.get(token).copied().unwrap_or(0));
                    if held_by.is_some_and(|held_by| held_by < nodes / 2 + 1)
                        && let Some(session) = session
                    {
                        broken.push((call, *session, OperatorFault::NamedMinority));
                        continue;
                    }
                    let lives = lives.get(token.as_str()).map_or(&[][..], Vec::as_slice);
                    if let Some(session) = session
                        && dropped_by_quorum(lives, session, call, nodes, (faults, slack))
                    {
                        broken.push((call, *session, OperatorFault::NamedDropped));
                        continue;
                    }
                    let Some(session) = owners.get(token.as_str()) else {
                        if let Some(attempt) = tried.get(token.as_str())
                            && named_after_unwind(attempt, call, nodes, (faults, slack))
                        {
                            broken.push((call, *attempt, OperatorFault::NamedUnwound));
                        }
                        continue;
                    };
                    if session.released.is_some_and(|at| at < call.start) {
                        broken.push((call, *session, OperatorFault::LongGone));
                    }
                }
                if *answered < nodes || nodes == 0 {
                    continue;
                }
                let granted_before = spans.partition_point(|(grant, _, _)| *grant <= call.start);
                let open = spans[..granted_before]
                    .iter()
                    .filter(|(_, until, _)| call.end <= *until);
                for (_, _, session) in open {
                    let certain = session
                        .windows()
                        .iter()
                        .any(|(from, until)| *from <= call.start && call.end <= *until);
                    if certain
                        && !holders.contains(&session.owner)
                        && !may_lose_holds(faults, calls, resource, session.start, call.end)
                    {
                        broken.push((call, *session, OperatorFault::Missed));
                    }
                }
            }
            OperatorAction::ForceRelease { fence: Some(fence) } => {
                for session in sessions {
                    let Some(token) = session.fence else {
                        continue;
                    };
                    if session.grant.is_some_and(|g| g < call.start) && token >= *fence {
                        broken.push((call, *session, OperatorFault::FenceNotAbove));
                    }
                    // An adopted hold carries the token issued for the hold it
                    // was adopted from: judge it from that hold's start.
                    if issued_at(session, owners) > call.end && token <= *fence {
                        broken.push((call, *session, OperatorFault::FenceNotBelow));
                    }
                }
            }
            // An ask takes nothing: `notices.rs` judges who heard it.
            OperatorAction::ForceRelease { fence: None } | OperatorAction::Ask { .. } => {}
        }
    }
    broken
}

/// Whether the key audit saw a hold (its `lives`, on any node) gone before
/// `call` began from more of the `nodes` than a quorum can spare: an
/// inspection that named it counted fewer than a quorum. A node counts only
/// when every life of the hold the audit saw there had ended before the
/// call began, each ended by a read that answered without it, and no fault
/// that can bring a hold back (a restart's log replaying a removal it had
/// not written, a clock jumping back over the hold's expiry:
/// [`LOSES_OR_AGES`]) struck that node from the slack before it ended to
/// the call's end: a hold does not come back by itself, and one that came
/// back is a later life, unless it was back only between two reads. Nor
/// does a node count where the hold was gone before its `session`'s acquire
/// stopped trying its token ([`Session::unwind_due`]: the grant, or the
/// end of an acquire never granted): a waiting acquire sends the same token
/// again, and a retry may put it back between two of the audit's reads.
fn dropped_by_quorum(
    lives: &[&KeyLife],
    session: &Session,
    call: &OperatorCall,
    nodes: usize,
    (faults, slack): (&[FaultEvent], Duration),
) -> bool {
    let brought_back = |node: usize, gone: Duration| {
        faults.iter().any(|f| {
            LOSES_OR_AGES.contains(&f.kind)
                && f.nodes.contains(&node)
                && f.overlaps(gone.saturating_sub(slack), call.end)
        })
    };
    let tried_after = |gone: Duration| session.unwind_due().is_none_or(|due| gone < due);
    let mut ended_on: HashMap<usize, bool> = HashMap::new();
    for life in lives {
        let ended = life.gone.is_some_and(|gone| {
            gone <= call.start && !tried_after(gone) && !brought_back(life.node, gone)
        });
        *ended_on.entry(life.node).or_insert(true) &= ended;
    }
    let dropped = ended_on.values().filter(|ended| **ended).count();
    nodes > 0 && dropped > nodes - (nodes / 2 + 1)
}

/// Whether an inspection `call` that named a token `attempt` tried, never
/// granted with it, broke its promise to name only what a quorum holds:
/// the lock had unwound that attempt ([`Session::unwind_due`]) more than
/// half the slack before the call began (a loaded client may send the
/// unwind late), and fewer than a quorum of the `nodes` were under a fault
/// that could still hold the unwind back when the call began, or had held
/// the attempt's own write back (the `orphan-key` rule's excuse,
/// [`explains`]).
fn named_after_unwind(
    attempt: &Session,
    call: &OperatorCall,
    nodes: usize,
    (faults, slack): (&[FaultEvent], Duration),
) -> bool {
    let Some(due) = attempt.unwind_due() else {
        return false;
    };
    if nodes == 0 || call.start <= due + slack / 2 {
        return false;
    }
    let sender = Sender {
        gone: false,
        group: Some(attempt.group),
    };
    let held_back = (0..nodes)
        .filter(|&node| {
            faults.iter().any(|f| {
                explains(
                    f,
                    slack,
                    node,
                    ((attempt.start.min(due), due), call.start),
                    Some((attempt.start, due)),
                    sender,
                )
            })
        })
        .count();
    held_back < nodes / 2 + 1
}

/// Whether something between `from` and `until` may have taken a hold off
/// a node or aged it early: a fault that restarts a node or wipes its keys,
/// a clock fault, a failover or slot migration of a cluster master (a lost
/// hold, or one in transit between two shards read one after the other),
/// or a force-release of the resource.
fn may_lose_holds(
    faults: &[FaultEvent],
    calls: &[OperatorCall],
    resource: &str,
    from: Duration,
    until: Duration,
) -> bool {
    faults
        .iter()
        .any(|f| LOSES_OR_AGES.contains(&f.kind) && f.overlaps(from, until))
        || calls
            .iter()
            .any(|c| c.is_force_release_of(resource) && c.start <= until && c.end >= from)
}

/// How many holders the run's force-releases ousted (granted, with a
/// token, before a force-release began, and holding until after it began):
/// zero means the fence promise was never tested.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{OperatorAction, OperatorCall, Session, ousted_holders};
/// let ms = Duration::from_millis;
/// let mut held = Session::granted(0, "r", "a", ms(0), ms(1), ms(900));
/// held.fence = Some(5);
/// let call = OperatorCall { resource: "r".into(), start: ms(100), end: ms(102),
///     action: OperatorAction::ForceRelease { fence: Some(6) } };
/// assert_eq!(ousted_holders(&[held], &[call]), 1);
/// ```
#[must_use]
pub fn ousted_holders(sessions: &[Session], calls: &[OperatorCall]) -> usize {
    sessions
        .iter()
        .filter(|s| s.fence.is_some())
        .filter(|s| {
            let (Some(grant), Some(end)) = (s.grant, s.exclusive_until()) else {
                return false;
            };
            calls.iter().any(|c| {
                c.is_force_release_of(&s.resource)
                    && matches!(c.action, OperatorAction::ForceRelease { fence: Some(_) })
                    && grant < c.start
                    && c.start < end
            })
        })
        .count()
}

/// How many inspections named a holder: zero means the inspection
/// promises were never tested against a held resource.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{OperatorAction, OperatorCall, inspections_naming_holders};
/// let call = OperatorCall { resource: "r".into(), start: Duration::ZERO, end: Duration::ZERO,
///     action: OperatorAction::Inspect { holders: vec!["a".into()], answered: 3, reported: None } };
/// assert_eq!(inspections_naming_holders(&[call]), 1);
/// ```
#[must_use]
pub fn inspections_naming_holders(calls: &[OperatorCall]) -> usize {
    calls
        .iter()
        .filter(
            |c| matches!(&c.action, OperatorAction::Inspect { holders, .. } if !holders.is_empty()),
        )
        .count()
}

#[cfg(test)]
#[path = "tests/operator_tests.rs"]
pub(super) mod tests;

#[cfg(test)]
#[path = "tests/operator_token_tests.rs"]
mod token_tests;
