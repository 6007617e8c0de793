//! `Exercised`: what a run actually tested, from its history and fault log,
//! so a run that tested nothing cannot pass (as etcd's robustness suite
//! validates its own runs): sessions granted, holders that ran to within a
//! tenth of their lease of its end, paused holders, lost leases, and each
//! fault kind that struck while some lock was held.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use crate::evidence::{Holder, Outcome, Session};
use crate::faults::FaultEvent;
use crate::faults::FaultKind;

/// Counts of what a run exercised.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::Exercised;
/// let nothing = Exercised::measure(&[], &[]);
/// assert_eq!(nothing.granted, 0);
/// let why = nothing.vacuous(Duration::ZERO, &[], &[]);
/// assert!(why.iter().any(|w| w.contains("no session was granted")));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Exercised {
    /// Sessions started.
    pub sessions: usize,
    /// Sessions granted.
    pub granted: usize,
    /// Accepted writes.
    pub completed: usize,
    /// Holders that held until within a tenth of their lease of its end.
    pub near_deadline: usize,
    /// Holders paused in their critical section (by a GC pause or a client pause).
    pub paused: usize,
    /// Granted sessions that found their lease gone (gave up, were refused
    /// by the fenced store, failed to extend, or wrote after the deadline).
    pub lost_leases: usize,
    /// Writes the fenced store refused.
    pub rejected: usize,
    /// Per fault kind, how many faults struck while some lock was held
    /// (a client fault: a lock held by the client group it hit).
    pub faults_while_held: BTreeMap<FaultKind, usize>,
    /// Granted sessions per lock kind (when the history says the kind).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_kind: BTreeMap<String, usize>,
    /// Sessions that held while a hold they share with held the same
    /// resource, by kind of sharing (`readers`, `owner`, `permits`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub shared: BTreeMap<&'static str, usize>,
    /// Futures dropped part-way, by which (`acquire`, `release`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub dropped: BTreeMap<&'static str, usize>,
    /// Renewing holders whose lease was extended at least twice.
    #[serde(default)]
    pub renewed: usize,
    /// Holds handed over as lease tickets, and how their adopters fared.
    #[serde(default)]
    pub hand_overs: HandOvers,
    /// Whether any session could share (a mixed run): then sharing must happen.
    #[serde(skip)]
    sharers: bool,
}

/// Holds handed over as lease tickets ([`Session::adopted_from`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct HandOvers {
    /// Holds handed over (distinct old owners).
    pub handed: usize,
    /// Adopters granted.
    pub adopted: usize,
    /// Adopters refused.
    pub refused: usize,
}

impl Exercised {
    /// Measures a run.
    ///
    /// # Examples
    ///
    /// See [`Exercised`].
    #[must_use]
    pub fn measure(sessions: &[Session], faults: &[FaultEvent]) -> Self {
        let mut out = Self {
            sessions: sessions.len(),
            ..Self::default()
        };
        // Per client group, the granted windows sorted by start with the
        // running maximum of their ends: "was any lock held in [a, b]" is
        // then one binary search.
        let mut windows: BTreeMap<Option<usize>, Vec<(Duration, Duration)>> = BTreeMap::new();
        let client_pauses: Vec<&FaultEvent> = faults
            .iter()
            .filter(|f| f.kind == FaultKind::ClientPause)
            .collect();
        out.shared = super::sharing::shared_holds(sessions);
        out.sharers = sessions.iter().any(|s| s.share.is_some());
        let mut handed = std::collections::BTreeSet::new();
        for s in sessions {
            if let Some(dropped) = s.dropped {
                *out.dropped.entry(dropped.name()).or_default() += 1;
            }
            if let Some(from) = &s.adopted_from {
                handed.insert(from.as_str());
                let granted = s.grant.is_some();
                out.hand_overs.adopted += usize::from(granted);
                out.hand_overs.refused += usize::from(!granted);
            }
        }
        out.hand_overs.handed = handed.len();
        for s in sessions.iter().filter(|s| s.grant.is_some()) {
            out.granted += 1;
            if !s.kind.is_empty() {
                *out.by_kind.entry(s.kind.clone()).or_default() += 1;
            }
            out.renewed += usize::from(s.holder == Holder::Renewing && s.extensions.len() >= 2);
            out.completed += usize::from(s.outcome == Outcome::Completed);
            out.rejected += usize::from(s.outcome == Outcome::Rejected);
            out.near_deadline += usize::from(s.ran_near_deadline());
            let paused_by_client_fault = client_pauses.iter().any(|f| {
                f.group == Some(s.group)
                    && s.grant.is_some_and(|g| f.start >= g)
                    && s.release.is_some_and(|r| f.start <= r)
            });
            out.paused += usize::from(s.paused.is_some() || paused_by_client_fault);
            let wrote_late = matches!((s.write_start, s.deadline()), (Some(w), Some(d)) if w > d);
            let gave_up = matches!(s.outcome, Outcome::Abandoned | Outcome::Rejected);
            let failed_extension = s.holder == Holder::Extending && s.extensions.is_empty();
            out.lost_leases += usize::from(wrote_late || gave_up || failed_extension);
            let held = s.windows();
            let (Some(from), Some(until)) = (held.first(), held.last()) else {
                continue;
            };
            for key in [None, Some(s.group)] {
                windows.entry(key).or_default().push((from.0, until.1));
            }
        }
        let reach: BTreeMap<Option<usize>, (Vec<Duration>, Vec<Duration>)> = windows
            .into_iter()
            .map(|(group, mut list)| {
                list.sort();
                let mut furthest = Duration::ZERO;
                let ends = list
                    .iter()
                    .map(|(_, end)| {
                        furthest = furthest.max(*end);
                        furthest
                    })
                    .collect();
                (
                    group,
                    (list.into_iter().map(|(start, _)| start).collect(), ends),
                )
            })
            .collect();
        for f in faults {
            let key = if f.kind.is_client_fault() {
                f.group
            } else {
                None
            };
            let Some((starts, ends)) = reach.get(&key) else {
                continue;
            };
            let before = starts.partition_point(|start| *start <= f.end);
            if before > 0 && ends[before - 1] >= f.start {
                *out.faults_while_held.entry(f.kind).or_default() += 1;
            }
        }
        out
    }

    /// Why the run proves nothing, if it does not: empty when it exercised
    /// what it was asked to. `kinds` are the fault kinds asked for, `holders`
    /// the holder kinds in the mix.
    ///
    /// # Examples
    ///
    /// See [`Exercised`].
    #[must_use]
    pub fn vacuous(
        &self,
        duration: Duration,
        kinds: &[FaultKind],
        holders: &[Holder],
    ) -> Vec<String> {
        let mut why = Vec::new();
        if duration.is_zero() {
            why.push("the run lasted 0 s".to_owned());
        }
        if self.granted == 0 {
            why.push(format!(
                "no session was granted (of {}): are the nodes masters, reachable, and enough of them?",
                self.sessions
            ));
        }
        if !kinds.is_empty() && self.faults_while_held.is_empty() {
            why.push("no fault struck while a lock was held".to_owned());
        }
        if holders.contains(&Holder::ToDeadline) && self.near_deadline == 0 {
            why.push("no holder ran to within 10% of its deadline".to_owned());
        }
        let pausing = holders
            .iter()
            .any(|h| matches!(h, Holder::Paused | Holder::Extending))
            || kinds.contains(&FaultKind::ClientPause);
        if pausing && self.paused == 0 {
            why.push("no holder was paused".to_owned());
        }
        // Sharing needs two compatible holds at once on one name, and a
        // renewal that lasts needs a renewing holder to keep its lease
        // through two extensions under faults (about 3 % of grants): a
        // short mixed run may honestly see neither; one of half a minute must.
        let long = duration >= Duration::from_secs(30);
        if holders.contains(&Holder::Renewing) && self.renewed == 0 && long {
            why.push("no renewing holder kept its lease through two extensions".to_owned());
        }
        if self.sharers && self.shared.is_empty() && long {
            why.push(
                "no hold shared its resource (readers, one reentrant owner, permits), so sharing was never tested"
                    .to_owned(),
            );
        }
        why
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_fault_counts_only_when_it_struck_while_a_lock_was_held() {
        let s = Session::granted(0, "r", "a", ms(0), ms(100), ms(200));
        let during = FaultEvent::new(FaultKind::Stall, vec![0], ms(150), ms(300));
        let after = FaultEvent::new(FaultKind::Kill, vec![0], ms(250), ms(300));
        let run = Exercised::measure(&[s], &[during, after]);
        assert_eq!(run.faults_while_held.get(&FaultKind::Stall), Some(&1));
        assert_eq!(run.faults_while_held.get(&FaultKind::Kill), None);
    }

    #[test]
    fn a_client_fault_counts_only_for_its_own_group() {
        let mut s = Session::granted(0, "r", "a", ms(0), ms(100), ms(200));
        s.group = 1;
        let other = FaultEvent::new(FaultKind::ClientPause, vec![], ms(150), ms(160)).on_group(0);
        let own = FaultEvent::new(FaultKind::ClientPause, vec![], ms(150), ms(160)).on_group(1);
        let run = Exercised::measure(std::slice::from_ref(&s), &[other]);
        assert!(run.faults_while_held.is_empty());
        let run = Exercised::measure(&[s], &[own]);
        assert_eq!(run.paused, 1);
        assert_eq!(run.faults_while_held.get(&FaultKind::ClientPause), Some(&1));
    }

    #[test]
    fn a_run_that_tested_nothing_says_why() {
        let refused = Session::refused(0, "r", ms(0), "unavailable");
        let run = Exercised::measure(&[refused], &[]);
        let why = run.vacuous(ms(1000), &[FaultKind::Kill], &[Holder::ToDeadline]);
        assert_eq!(why.len(), 3, "{why:?}");
        let full = Session::granted(0, "r", "a", ms(0), ms(0), ms(100));
        let fault = FaultEvent::new(FaultKind::Kill, vec![0], ms(10), ms(20));
        let run = Exercised::measure(&[full], &[fault]);
        assert!(
            run.vacuous(ms(1000), &[FaultKind::Kill], &[Holder::ToDeadline])
                .is_empty()
        );
    }

    #[test]
    fn a_long_mixed_run_in_which_nothing_shared_or_renewed_is_vacuous() {
        let reader = |from: u64| {
            let mut s = Session::granted(0, "r", "a", ms(from), ms(from), ms(from + 100));
            s.share = Some(crate::evidence::Share::Readers);
            s
        };
        let mut renewing = Session::granted(1, "r", "b", ms(500), ms(500), ms(600));
        renewing.holder = Holder::Renewing;
        let alone = Exercised::measure(&[reader(0), reader(200), renewing.clone()], &[]);
        let why = alone.vacuous(ms(30_000), &[], &[Holder::Renewing]);
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(alone.vacuous(ms(10_000), &[], &[]).is_empty(), "short");
        assert!(
            alone
                .vacuous(ms(20_000), &[], &[Holder::Renewing])
                .is_empty(),
            "a 20 s run may honestly renew nothing twice"
        );
        let ms2 = |at: u64| crate::evidence::Extension {
            at: ms(at),
            until: ms(at + 100),
        };
        renewing.extensions = vec![ms2(550), ms2(640)];
        let shared = Exercised::measure(&[reader(0), reader(50), renewing], &[]);
        assert_eq!(shared.shared.get("readers"), Some(&2));
        assert!(
            shared
                .vacuous(ms(30_000), &[], &[Holder::Renewing])
                .is_empty()
        );
    }
}
