//! What a holder whose lock keeps its lease alive (a watchdog:
//! [`Holder::Kept`]) must hear from its lock, and how soon:
//!
//! - **The loss notice** (`loss-notice`): that an operator's force-release
//!   took its hold, within [`NOTICE`] of the call's return, not at its
//!   next renewal (up to two thirds of a TTL later). The lock announces
//!   the loss on every node it freed, and the holder's watchdog, listening
//!   there, extends at once and is refused. Judged for the first
//!   force-release that succeeded (it returned a token) while the holder
//!   believed, begun [`KEPT_SETTLED`] after its grant (the watchdog listens
//!   by then): the holder's belief ends at its release, which it begins as
//!   soon as it sees its lease lost.
//! - **The ask** (`ask-notice`): that an operator asked it to let go
//!   (`Redlock::ask_release`), within [`NOTICE`] of the ask's start (the
//!   ask is announced on every node in its first round): the holder
//!   records when it heard (`Session::asked`). Judged for the first ask
//!   that returned while the holder believed, begun [`KEPT_SETTLED`] after
//!   its job began (`read_at`: it listens from then).
//!
//! Each is excused when faults struck a majority of the nodes (or the
//! holder's client group's path to them: a fault aimed at the group, its
//! fault proxy held by a starved machine) between the call's start and
//! the due time: the notice and the holder's answer travel on those
//! paths. A hold of the group's own runtime (`RuntimeLag` with no node)
//! delays everything the client does: the notice is due [`NOTICE`] after
//! such a hold ends.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::check::audit::hold_life::LOSES_OR_AGES;
use crate::check::verdict::Evidence;
use crate::check::violation::Violation;
use crate::evidence::{Holder, OperatorAction, OperatorCall, RuntimeLag, Session};
use crate::faults::{FaultEvent, FaultKind};
use crate::lag_meter::LAG_TICK;

/// How long after a force-release returned its kept holder may still
/// believe in its lease: the notice heard (a node round trip), the
/// extension the watchdog sends at once refused (up to the slowest
/// group's node timeout, 250 ms, and again after a failed try), and the
/// harness's look at the lease (every 20 ms).
pub(crate) const NOTICE: Duration = Duration::from_millis(600);

/// How long a hold has been kept before a force-release judges its
/// notice: the watchdog subscribes to the lock's loss notices when it
/// starts, at the grant, and listens within a round trip.
pub(crate) const KEPT_SETTLED: Duration = Duration::from_secs(1);

/// Every kept holder that believed in its lease past the notice's due
/// time after a force-release took it, or did not hear an ask in time.
pub(crate) fn unheard(evidence: &Evidence<'_>) -> Vec<Violation> {
    if evidence.nodes == 0 {
        return Vec::new();
    }
    let kept = (evidence.sessions.iter()).filter(|s| s.holder == Holder::Kept && s.renews_itself);
    let mut unheard = Vec::new();
    for s in kept {
        if let Some((call, due)) = unheard_loss(evidence, s) {
            unheard.push(Violation::LossUnheard {
                session: Box::new(s.clone()),
                call: Box::new(call.clone()),
                due,
            });
        }
        if let Some((call, due)) = unheard_ask(evidence, s) {
            unheard.push(Violation::AskUnheard {
                session: Box::new(s.clone()),
                call: Box::new(call.clone()),
                due,
            });
        }
    }
    unheard
}

/// How long after each force-release that the rule judges (the first
/// that took a kept hold, a second or more after its grant) its holder
/// still believed in its lease (zero when it knew before the call
/// returned): how often the rule was tested, and the notice's latency
/// under the run's faults.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{Holder, OperatorAction, OperatorCall, Session, kept_holders_ousted};
/// let ms = Duration::from_millis;
/// let mut kept = Session::granted(0, "r", "a", ms(0), ms(10), ms(2000));
/// (kept.holder, kept.renews_itself, kept.release) = (Holder::Kept, true, Some(ms(2040)));
/// let call = OperatorCall { resource: "r".into(), start: ms(1990), end: ms(2000),
///     action: OperatorAction::ForceRelease { fence: Some(7) } };
/// assert_eq!(kept_holders_ousted(&[kept], &[call]), [ms(40)]);
/// ```
#[must_use]
pub fn kept_holders_ousted(sessions: &[Session], calls: &[OperatorCall]) -> Vec<Duration> {
    (sessions.iter())
        .filter(|s| s.holder == Holder::Kept && s.renews_itself)
        .filter_map(|s| {
            let believed_until = s.release.or(s.ended)?;
            let call = ousting(calls, s)?;
            Some(believed_until.saturating_sub(call.end))
        })
        .collect()
}

/// The first force-release of `s`'s resource that returned a token while
/// `s` believed, begun [`KEPT_SETTLED`] after its grant.
fn ousting<'a>(calls: &'a [OperatorCall], s: &Session) -> Option<&'a OperatorCall> {
    let (grant, believed_until) = (s.grant?, s.release.or(s.ended)?);
    (calls.iter())
        .filter(|c| {
            c.is_force_release_of(&s.resource)
                && matches!(c.action, OperatorAction::ForceRelease { fence: Some(_) })
                && c.start >= grant + KEPT_SETTLED
                && c.start < believed_until
        })
        .min_by_key(|c| c.start)
}

/// For each ask the rule judges (the first that returned while a kept
/// holder believed, a second or more after its job began), how long after
/// the ask began its holder heard it; `None` when it never did (it let go
/// first for another reason, or did not hear).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{Holder, OperatorAction, OperatorCall, Session, kept_holders_asked};
/// let ms = Duration::from_millis;
/// let mut kept = Session::granted(0, "r", "a", ms(0), ms(10), ms(3000));
/// (kept.holder, kept.renews_itself, kept.release) = (Holder::Kept, true, Some(ms(2100)));
/// kept.asked = Some(ms(2030));
/// let call = OperatorCall { resource: "r".into(), start: ms(2000), end: ms(2500),
///     action: OperatorAction::Ask { freed: Some(true) } };
/// assert_eq!(kept_holders_asked(&[kept], &[call]), [Some(ms(30))]);
/// ```
#[must_use]
pub fn kept_holders_asked(sessions: &[Session], calls: &[OperatorCall]) -> Vec<Option<Duration>> {
    (sessions.iter())
        .filter(|s| s.holder == Holder::Kept && s.renews_itself)
        .filter_map(|s| {
            let call = asking(calls, s)?;
            Some(s.asked.map(|heard| heard.saturating_sub(call.start)))
        })
        .collect()
}

/// The first ask of `s`'s resource that returned while `s` believed,
/// begun [`KEPT_SETTLED`] after its job began (it listens from then).
fn asking<'a>(calls: &'a [OperatorCall], s: &Session) -> Option<&'a OperatorCall> {
    let (listening, believed_until) = (s.read_at.or(s.grant)?, s.release.or(s.ended)?);
    (calls.iter())
        .filter(|c| {
            c.resource == s.resource
                && matches!(c.action, OperatorAction::Ask { freed: Some(_) })
                && c.start >= listening + KEPT_SETTLED
                && c.start < believed_until
        })
        .min_by_key(|c| c.start)
}

/// The force-release `s` did not notice in time, and when it was due.
fn unheard_loss<'a>(evidence: &Evidence<'a>, s: &Session) -> Option<(&'a OperatorCall, Duration)> {
    let believed_until = s.release.or(s.ended)?;
    let call = ousting(evidence.operator, s)?;
    let due = notice_due(evidence.lags, s.group, call.end);
    let excused = || majority_struck(evidence, s.group, (call.start, due));
    (believed_until > due && !excused()).then_some((call, due))
}

/// The ask `s` did not hear in time, and when it was due: the first that
/// returned while `s` believed, begun [`KEPT_SETTLED`] after its job
/// began.
fn unheard_ask<'a>(evidence: &Evidence<'a>, s: &Session) -> Option<(&'a OperatorCall, Duration)> {
    let believed_until = s.release.or(s.ended)?;
    let call = asking(evidence.operator, s)?;
    let due = notice_due(evidence.lags, s.group, call.start);
    let heard_in_time = s.asked.is_some_and(|heard| heard <= due);
    let excused = || majority_struck(evidence, s.group, (call.start, due));
    (believed_until > due && !heard_in_time && !excused()).then_some((call, due))
}

/// [`NOTICE`] after `from`, or after the end of a hold of client group
/// `group`'s runtime that overlaps that span (and so on, a chain).
fn notice_due(lags: &[RuntimeLag], group: usize, from: Duration) -> Duration {
    let mut due = from + NOTICE;
    while let Some(later) = (lags.iter())
        .filter(|lag| lag.group == group && lag.node.is_none())
        .filter(|lag| lag.held_from().saturating_sub(LAG_TICK) <= due && lag.at > from)
        .map(|lag| lag.at + NOTICE)
        .filter(|&later| later > due)
        .max()
    {
        due = later;
    }
    due
}

/// Whether faults, or holds of client group `group`'s fault proxies,
/// struck a majority of the nodes within `window` (a pause of the group's
/// clients strikes its path to every node).
fn majority_struck(
    evidence: &Evidence<'_>,
    group: usize,
    (from, until): (Duration, Duration),
) -> bool {
    let paused = |f: &FaultEvent| {
        f.kind == FaultKind::ClientPause && f.group == Some(group) && f.overlaps(from, until)
    };
    if evidence.faults.iter().any(paused) {
        return true;
    }
    let by_fault = |f: &&FaultEvent| {
        (f.kind.delays_commands() || LOSES_OR_AGES.contains(&f.kind))
            && f.group.is_none_or(|g| g == group)
            && f.overlaps(from, until)
    };
    let by_lag = |lag: &&RuntimeLag| {
        lag.group == group && lag.held_from().saturating_sub(LAG_TICK) <= until && lag.at >= from
    };
    let struck: BTreeSet<usize> = (evidence.faults.iter().filter(by_fault))
        .flat_map(|f| f.nodes.iter().copied())
        .chain(
            evidence
                .lags
                .iter()
                .filter(by_lag)
                .filter_map(|lag| lag.node),
        )
        .collect();
    struck.len() > evidence.nodes / 2
}

#[cfg(test)]
#[path = "notices_tests.rs"]
mod tests;
