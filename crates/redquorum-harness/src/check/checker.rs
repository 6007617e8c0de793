//! The checker: pure logic over a recorded run, proving per resource
//! (1) no two holders' windows overlap (extensions included) unless their
//! holds may share (`sharing.rs`: readers, one reentrant owner, up to K permits),
//! (2) no update is lost: no two accepted read-modify-writes read the same
//! value (each lost one is named with the session that overwrote it), and
//! the protected counter equals the accepted writes, (3) fencing tokens
//! strictly increase in grant order between holds that cannot share, and
//! a fenced store never accepts a write whose token is below one it
//! accepted before, (4) no lock key
//! outlived the run plus the max TTL, and (5) from the key audit taken
//! during the run, no lock key lived on after its owner's attempt was
//! unwound or its lease released, (6) with a lock-delay, no grant came
//! within the delay after a holder that vanished (`lock_delay.rs`), and (7)
//! an operator's inspections and force-releases kept their promises
//! (`operator.rs`; a force-release excuses the overlap it causes), and (8)
//! no lease was renewed after its deadline had passed (`revival.rs`), and
//! (9) from the key audit, no live hold was taken off a node by anyone but
//! its owner, and no hold came back on a node after it had gone
//! (`hold_life.rs`), and (10) from the audit's rounds, while a client
//! believed it held (grant or renewed extension to its deadline), a
//! majority of the nodes backed it (`unbacked.rs`), and (11) each
//! fencing token handed out was held by a quorum's fence counters
//! (`token_backing.rs`), and (12) each node whose vote the lock counted
//! for a grant held it to the granted deadline (`vote_backing.rs`).
//! Unfenced holders that write after their deadline (the assumption a
//! paused client breaks) are flagged too. A hold of several resources (an
//! all-of set, `Session::also`) is judged as a hold of each of them
//! (`Session::covered`), its write only on the resource it was drawn for.
//!
//! The rules are checked here and in the files they are named after; the
//! [`Violation`]s are in `violation/`, the [`Evidence`] and the
//! [`Verdict`] in `verdict.rs`.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::audit::hold_life::{HoldContext, came_back, moves_back, removed};
use super::audit::{orphan, token_backing, unbacked, vote_backing};
use super::forced::ForceReleases;
use super::lock_delay::early_grants;
use super::operator::broken_promises;
use super::verdict::{Evidence, Verdict};
use super::violation::Violation;
use super::{by_time, notices, revival, sharing};
use crate::evidence::{LeakedKey, Outcome, Session};

/// Checks a history against the protected values (`resource` → value read
/// after the run) and the lock keys found after the run plus the max TTL.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use std::time::Duration;
/// use redquorum_harness::{check, Session};
///
/// let ms = Duration::from_millis;
/// let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
/// let b = Session::granted(1, "r", "b", ms(50), ms(60), ms(200)); // granted inside a's window
/// let values = BTreeMap::from([("r".to_owned(), 2)]);
/// let verdict = check(&[a, b], &values, &[]);
/// assert_eq!(verdict.count("overlap"), 1);
/// ```
#[must_use]
pub fn check(
    sessions: &[Session],
    protected: &BTreeMap<String, i64>,
    leaked: &[LeakedKey],
) -> Verdict {
    check_evidence(&Evidence {
        leaked,
        ..Evidence::new(sessions, protected)
    })
}

/// Checks everything a run left: see the module doc for the properties.
///
/// # Examples
///
/// See [`Evidence`] and [`check`].
#[must_use]
pub fn check_evidence(evidence: &Evidence<'_>) -> Verdict {
    let mut violations = Vec::new();
    // A hold of several resources (an all-of set) is judged on each.
    let covered: Vec<Session> = evidence
        .sessions
        .iter()
        .flat_map(Session::covered)
        .collect();
    let mut by_resource: BTreeMap<&str, Vec<&Session>> = BTreeMap::new();
    for s in evidence.sessions.iter().chain(&covered) {
        by_resource.entry(&s.resource).or_default().push(s);
    }
    let owners = granted_owners(evidence.sessions);
    let tried = attempts_by_token(evidence.sessions);
    let forced = ForceReleases::new(evidence.operator, evidence.faults, evidence.slack);
    for (resource, list) in &by_resource {
        let mut granted: Vec<&Session> =
            list.iter().copied().filter(|s| s.grant.is_some()).collect();
        granted.sort_by_key(|s| s.grant);
        check_overlaps(&granted, &forced, &mut violations);
        violations.extend(
            broken_promises(
                resource,
                &granted,
                (&owners, &tried),
                evidence.operator,
                (evidence.nodes, evidence.keys),
                (evidence.faults, evidence.slack),
            )
            .into_iter()
            .map(|(call, session, fault)| Violation::Operator {
                call: Box::new(call.clone()),
                session: Box::new(session.clone()),
                fault,
            }),
        );
        check_fences(&granted, &mut violations);
        check_stale_writes(&granted, &mut violations);
        let excused = check_lost_updates(&granted, &forced, &mut violations);
        if let Some(rule) = &evidence.lock_delay {
            violations.extend(
                early_grants(&granted, rule)
                    .into_iter()
                    .map(|(vanished, early)| Violation::EarlyGrant {
                        vanished: Box::new(vanished.clone()),
                        early: Box::new(early.clone()),
                        blocked_until: rule.blocked_until(vanished),
                    }),
            );
        }
        let value = evidence.protected.get(*resource).copied().unwrap_or(0);
        check_counter(resource, list, value, excused, &mut violations);
    }
    // A protected value for a resource nobody completed must still be zero.
    for (resource, value) in evidence.protected {
        if !by_resource.contains_key(resource.as_str()) && *value != 0 {
            violations.push(Violation::CounterMismatch {
                resource: resource.clone(),
                completed: 0,
                indeterminate: 0,
                value: *value,
            });
        }
    }
    // A renewal is the client's, once for its whole set.
    for s in evidence.sessions.iter().filter(|s| s.grant.is_some()) {
        violations.extend(
            revival::revivals(s)
                .into_iter()
                .map(|(extension, expired)| Violation::Revived {
                    session: Box::new(s.clone()),
                    extension,
                    expired,
                }),
        );
    }
    violations.extend(evidence.leaked.iter().cloned().map(Violation::Leaked));
    violations.extend(orphan::orphans(evidence, &owners, &tried));
    violations.extend(notices::unheard(evidence));
    check_hold_lives(evidence, &owners, &mut violations);
    let every_hold: Vec<Session> = evidence.sessions.iter().cloned().chain(covered).collect();
    let every_hold = Evidence {
        sessions: &every_hold,
        ..*evidence
    };
    violations.extend(unbacked::violations(&every_hold));
    violations.extend(vote_backing::violations(&every_hold));
    violations.extend(token_backing::violations(evidence));
    Verdict { violations }
}

/// Every granted session by its owner token.
pub(crate) fn granted_owners(sessions: &[Session]) -> HashMap<&str, &Session> {
    sessions
        .iter()
        .filter(|s| s.grant.is_some() && !s.owner.is_empty())
        .map(|s| (s.owner.as_str(), s))
        .collect()
}

/// Every session by each owner token its acquire tried but was not granted
/// with ([`Session::tried`]; the lock tells them, where it can).
pub(crate) fn attempts_by_token(sessions: &[Session]) -> HashMap<&str, &Session> {
    sessions
        .iter()
        .flat_map(|s| s.tried.iter().map(move |token| (token.as_str(), s)))
        .filter(|(token, s)| *token != s.owner)
        .collect()
}

/// Sweeps every exclusive window (grant and extensions) in start order,
/// against the windows of other sessions still open at its start; holds
/// that may share (`sharing.rs`: readers, one reentrant owner, up to K
/// permits) are excused, and so is a pair with an operator's force-release
/// between them, either way round (an ousted holder's extension may open
/// its window after its successor's grant).
fn check_overlaps(
    granted: &[&Session],
    forced: &ForceReleases<'_>,
    violations: &mut Vec<Violation>,
) {
    // (window end, session, when the window's claim was asked for)
    let mut open: Vec<(Duration, usize, Duration)> = Vec::new();
    let mut reported = std::collections::HashSet::new();
    for (from, until, i) in sharing::windows(granted) {
        open.retain(|(end, _, _)| *end > from);
        let asked = granted[i].asked_for(from);
        let holding: Vec<usize> = open.iter().map(|(_, j, _)| *j).collect();
        let over_count = sharing::permits_over(granted, &holding, i);
        for &(_, j, asked_j) in &open {
            let shares = sharing::may_share(granted[j], granted[i]) && !over_count.contains(&j);
            let excused = forced.excuse_overlap(granted[j], asked_j, granted[i])
                || forced.excuse_overlap(granted[i], asked, granted[j]);
            if j != i && !shares && !excused && reported.insert((j, i)) {
                violations.push(Violation::Overlap {
                    first: Box::new(granted[j].clone()),
                    second: Box::new(granted[i].clone()),
                });
            }
        }
        open.push((until, i, asked));
    }
}

fn check_fences(granted: &[&Session], violations: &mut Vec<Violation>) {
    for (earlier, later) in sharing::fence_inversions(granted) {
        violations.push(Violation::FenceNotIncreasing {
            earlier: Box::new(earlier.clone()),
            later: Box::new(later.clone()),
        });
    }
}

/// Unfenced: a write begun after the deadline. Fenced: an accepted write
/// begun after an access with a higher token had been accepted.
fn check_stale_writes(granted: &[&Session], violations: &mut Vec<Violation>) {
    let wrote = |s: &Session| matches!(s.outcome, Outcome::Completed | Outcome::Indeterminate(_));
    for s in granted.iter().filter(|s| s.fence.is_none() && wrote(s)) {
        if let (Some(write), Some(end)) = (s.write_start, s.deadline()) {
            if write > end {
                violations.push(Violation::StaleWrite {
                    session: Box::new((*s).clone()),
                    by: None,
                });
            }
        }
    }
    // Accepted fenced accesses: (end, token, session); reads count, since a
    // fenced read raises the store's token as a write does.
    let mut accesses: Vec<(Duration, u64, &Session)> = Vec::new();
    for s in granted.iter().filter(|s| s.fence.is_some()) {
        let token = s.fence.unwrap_or_default();
        if let (Some(at), Some(_)) = (s.read_at, s.read) {
            accesses.push((at, token, s));
        }
        if let (Outcome::Completed, Some(end)) = (&s.outcome, s.write_end) {
            accesses.push((end, token, s));
        }
    }
    accesses.sort_by_key(|(end, token, _)| (*end, *token));
    let mut writes: Vec<&&Session> = granted
        .iter()
        .filter(|s| s.fence.is_some() && s.outcome == Outcome::Completed && s.write_start.is_some())
        .collect();
    writes.sort_by_key(|s| s.write_start);
    let mut highest: Option<(u64, &Session)> = None;
    let mut next = 0;
    for w in writes {
        let start = w.write_start.unwrap_or_default();
        while next < accesses.len() && accesses[next].0 < start {
            let (_, token, s) = accesses[next];
            if highest.is_none_or(|(h, _)| token > h) {
                highest = Some((token, s));
            }
            next += 1;
        }
        if let Some((token, by)) = highest {
            if w.fence.unwrap_or_default() < token {
                violations.push(Violation::StaleWrite {
                    session: Box::new((*w).clone()),
                    by: Some(Box::new(by.clone())),
                });
            }
        }
    }
}

/// Two accepted read-modify-writes that wrote the same value read the same
/// one: the first write was overwritten. Unless a force-release came
/// between them and one had no token ([`ForceReleases::excuse_lost_update`]):
/// returns how many were so excused.
fn check_lost_updates(
    granted: &[&Session],
    forced: &ForceReleases<'_>,
    violations: &mut Vec<Violation>,
) -> u64 {
    let mut excused = 0;
    let mut by_value: HashMap<i64, Vec<&Session>> = HashMap::new();
    for s in granted.iter().filter(|s| s.outcome == Outcome::Completed) {
        if let (Some(_), Some(wrote)) = (s.read, s.wrote) {
            by_value.entry(wrote).or_default().push(s);
        }
    }
    let mut clashes: Vec<Vec<&Session>> = by_value.into_values().filter(|v| v.len() > 1).collect();
    clashes.sort_by_key(|v| v.iter().map(|s| s.write_end).min());
    for mut writers in clashes {
        writers.sort_by_key(|s| s.write_end);
        for by in &writers[1..] {
            if forced.excuse_lost_update(writers[0], by) {
                excused += 1;
                continue;
            }
            violations.push(Violation::LostUpdate {
                lost: Box::new(writers[0].clone()),
                by: Box::new((*by).clone()),
            });
        }
    }
    excused
}

/// The counter equals the accepted writes, give or take the indeterminate
/// ones and the `forced` lost updates a force-release excused.
fn check_counter(
    resource: &str,
    list: &[&Session],
    value: i64,
    forced: u64,
    violations: &mut Vec<Violation>,
) {
    let completed = list
        .iter()
        .filter(|s| s.outcome == Outcome::Completed)
        .count() as u64;
    let indeterminate = list
        .iter()
        .filter(|s| matches!(s.outcome, Outcome::Indeterminate(_)))
        .count() as u64;
    let in_range = u64::try_from(value)
        .is_ok_and(|v| v + forced >= completed && v <= completed + indeterminate);
    if !in_range {
        violations.push(Violation::CounterMismatch {
            resource: resource.to_owned(),
            completed,
            indeterminate,
            value,
        });
    }
}

/// Every audited hold of a granted owner that someone else took off its
/// node, or that came back on it after it had gone (`hold_life.rs`). A
/// hold whose token no granted session recorded (an attempt refused or
/// dropped, unwound by the library) is the orphan check's.
fn check_hold_lives(
    evidence: &Evidence<'_>,
    owners: &HashMap<&str, &Session>,
    violations: &mut Vec<Violation>,
) {
    let moves_back = moves_back(evidence.sessions);
    let ctx = HoldContext {
        ttl: evidence.ttl,
        slack: evidence.slack,
        faults: by_time::faults(evidence.faults),
        operator: by_time::calls(evidence.operator),
        clock_off: evidence.clock_off,
        moves_back: &moves_back,
        lags: evidence.lags,
    };
    for key in evidence.keys {
        let Some(owner) = owners.get(key.owner.as_str()) else {
            continue;
        };
        if removed(&ctx, key, owner) {
            violations.push(Violation::HoldRemoved {
                key: key.clone(),
                owner: Box::new((*owner).clone()),
            });
        }
        if came_back(&ctx, key, owner) {
            violations.push(Violation::HoldCameBack {
                key: key.clone(),
                owner: Box::new((*owner).clone()),
            });
        }
    }
}

#[cfg(test)]
#[path = "tests/checker_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "tests/checker_set_tests.rs"]
mod set_tests;

#[cfg(test)]
#[path = "tests/checker_hand_over_tests.rs"]
mod hand_over_tests;
