//! An operator's calls during a run, and what the checker holds them to.
//!
//! Beside the clients, an operator inspects resources (who holds them, as a
//! quorum of nodes reports) and force-releases them (ousting the holder,
//! with a fencing token for storage to refuse it by). Each call is recorded
//! with its interval on the history's clock ([`OperatorLog`](crate::OperatorLog)); the checker
//! then requires, per resource:
//!
//! - an inspection never names a holder whose release a quorum had
//!   confirmed before the inspection began (a long-gone holder);
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
//! overlap check excuses exactly those pairs ([`excuses_overlap`]).

use std::fmt;
use std::time::Duration;

use crate::evidence::{OperatorAction, OperatorCall, Session};
use crate::faults::{FaultEvent, FaultKind};

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
    /// An inspection did not name a holder that certainly held.
    Missed,
    /// A force-release's token is not above an earlier holder's token.
    FenceNotAbove,
    /// A later holder's token is not above a force-release's token.
    FenceNotBelow,
}

impl fmt::Display for OperatorFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OperatorFault::LongGone => "named a holder whose release a quorum had confirmed",
            OperatorFault::Missed => "did not name a certain holder",
            OperatorFault::FenceNotAbove => {
                "returned a token not above the token of a holder granted before it"
            }
            OperatorFault::FenceNotBelow => {
                "returned a token not below the token of a holder that began after it"
            }
        })
    }
}

/// Whether a force-release excuses `second`'s overlap with `first`: one
/// began before `second`'s grant and ended after `first` began to acquire,
/// so it may have ousted `first` and freed the resource for `second`.
#[must_use]
pub(crate) fn excuses_overlap(calls: &[OperatorCall], first: &Session, second: &Session) -> bool {
    let Some(granted) = second.grant else {
        return false;
    };
    calls.iter().any(|c| {
        c.is_force_release_of(&first.resource) && c.start <= granted && c.end >= first.start
    })
}

/// The operator calls on `resource` that break a promise, each with the
/// session it concerns. `sessions` are the resource's granted sessions in
/// grant order, `owners` every granted session of the run by owner token (a
/// multi-lock holds resources other than the one it is recorded under).
pub(crate) fn broken_promises<'a>(
    resource: &str,
    sessions: &[&'a Session],
    owners: &std::collections::HashMap<&str, &'a Session>,
    calls: &'a [OperatorCall],
    nodes: usize,
    faults: &[FaultEvent],
) -> Vec<(&'a OperatorCall, &'a Session, OperatorFault)> {
    let mut broken = Vec::new();
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
            OperatorAction::Inspect { holders, answered } => {
                for token in holders {
                    let Some(session) = owners.get(token.as_str()) else {
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
                    if session.start > call.end && token <= *fence {
                        broken.push((call, *session, OperatorFault::FenceNotBelow));
                    }
                }
            }
            OperatorAction::ForceRelease { fence: None } => {}
        }
    }
    broken
}

/// Whether something between `from` and `until` may have taken a hold off
/// a node or aged it early: a fault that restarts a node or wipes its keys,
/// a clock fault, or a force-release of the resource.
fn may_lose_holds(
    faults: &[FaultEvent],
    calls: &[OperatorCall],
    resource: &str,
    from: Duration,
    until: Duration,
) -> bool {
    let lossy = |kind: FaultKind| {
        matches!(
            kind,
            FaultKind::Kill | FaultKind::Forget | FaultKind::Clock | FaultKind::Strobe
        )
    };
    faults
        .iter()
        .any(|f| lossy(f.kind) && f.overlaps(from, until))
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
///     action: OperatorAction::Inspect { holders: vec!["a".into()], answered: 3 } };
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
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn inspect(start: u64, holders: &[&str], answered: usize) -> OperatorCall {
        OperatorCall {
            resource: "r".into(),
            start: ms(start),
            end: ms(start + 2),
            action: OperatorAction::Inspect {
                holders: holders.iter().map(|h| (*h).to_owned()).collect(),
                answered,
            },
        }
    }

    fn force(start: u64, fence: Option<u64>) -> OperatorCall {
        OperatorCall {
            resource: "r".into(),
            start: ms(start),
            end: ms(start + 2),
            action: OperatorAction::ForceRelease { fence },
        }
    }

    /// `a` held 10..500 and released at 500 (confirmed at 505), token 5;
    /// `b` acquired from 600, granted 610, token 9.
    fn two_holders() -> Vec<Session> {
        let mut a = Session::granted(0, "r", "a", ms(0), ms(10), ms(900));
        a.release = Some(ms(500));
        a.released = Some(ms(505));
        a.fence = Some(5);
        let mut b = Session::granted(1, "r", "b", ms(600), ms(610), ms(1500));
        b.fence = Some(9);
        vec![a, b]
    }

    fn faults_of(
        sessions: &[Session],
        calls: &[OperatorCall],
        faults: &[FaultEvent],
    ) -> Vec<OperatorFault> {
        let owners: HashMap<&str, &Session> =
            sessions.iter().map(|s| (s.owner.as_str(), s)).collect();
        let granted: Vec<&Session> = sessions.iter().collect();
        broken_promises("r", &granted, &owners, calls, 3, faults)
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
        let calls = [force(40, Some(7)), inspect(100, &[], 3)];
        assert!(faults_of(&sessions, &calls, &[]).is_empty());
    }

    #[test]
    fn a_force_release_token_must_sit_between_earlier_and_later_holders() {
        let sessions = two_holders();
        assert!(faults_of(&sessions, &[force(100, Some(7))], &[]).is_empty());
        assert_eq!(
            faults_of(&sessions, &[force(100, Some(5))], &[]),
            [OperatorFault::FenceNotAbove]
        );
        assert_eq!(
            faults_of(&sessions, &[force(100, Some(9))], &[]),
            [OperatorFault::FenceNotBelow]
        );
        // A failed force-release promises nothing.
        assert!(faults_of(&sessions, &[force(100, None)], &[]).is_empty());
    }

    #[test]
    fn only_a_force_release_between_the_first_acquire_and_the_second_grant_excuses_an_overlap() {
        let sessions = two_holders();
        let (a, b) = (&sessions[0], &sessions[1]);
        assert!(excuses_overlap(&[force(300, None)], a, b));
        assert!(
            !excuses_overlap(&[force(700, Some(10))], a, b),
            "after b's grant"
        );
        assert!(!excuses_overlap(&[inspect(300, &["a"], 3)], a, b));
        let mut elsewhere = force(300, Some(7));
        elsewhere.resource = "q".into();
        assert!(!excuses_overlap(&[elsewhere], a, b));
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
}
