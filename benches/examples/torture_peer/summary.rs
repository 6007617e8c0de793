//! The runner's summary of one run: violations by kind, the first one's
//! time, and how many of them the unfenced paused holder does not
//! explain. A `paused` holder writes after its deadline on purpose
//! (assumption (b) broken): against an unfenced store that is a stale
//! write, and the update it overwrites is lost, whatever the lock; having
//! rolled the counter back, it makes the next holders re-read values read
//! before, so their updates look lost too. What is left (overlaps, orphan
//! or removed keys, revivals, lost updates between holders that wrote in
//! time with no late write between them, leaks) is the lock's own, but
//! for one more: rslock's `extend`, when short of a quorum, unlocks the
//! hold on every node itself, so a holder whose extension failed has its
//! hold gone before it calls release, which the checker (expecting no
//! removal before the release) names `hold-removed`, and the next holder
//! may come in before the deadline it had (an `overlap`, though the
//! first gave up without writing). Those are counted
//! apart (`failed-extend-unlock`) for rslock only: redquorum's extend
//! leaves the hold as it was when it fails, so there it is the lock's own.

use std::time::Duration;

use redquorum_harness::{Holder, Session, TortureRun, Violation};

/// Whether `session` wrote after its last deadline (its first lease's end
/// or its last extension's).
fn wrote_late(session: &Session) -> bool {
    let last = session
        .extensions
        .iter()
        .map(|e| e.until)
        .chain(session.validity_end)
        .max();
    matches!((session.write_start, last), (Some(write), Some(end)) if write > end)
}

/// Whether a writer past its deadline wrote `resource` back to `value`
/// or below within `from..=until`: every holder after it re-reads values
/// read before, so updates made in between look lost.
fn rolled_back(
    sessions: &[Session],
    resource: &str,
    value: i64,
    from: Duration,
    until: Duration,
) -> bool {
    sessions.iter().any(|s| {
        s.resource == resource
            && wrote_late(s)
            && s.wrote.is_some_and(|w| w <= value)
            && s.write_end.is_some_and(|end| end >= from)
            && s.write_start.is_some_and(|start| start <= until)
    })
}

/// Whether a writer past its deadline explains `violation`: its stale
/// write, a lost update one of whose writers wrote late, or that a late
/// writer's rollback caused (between the first write and the second
/// read), or the counter those leave off.
fn explained(violation: &Violation, sessions: &[Session]) -> bool {
    match violation {
        Violation::StaleWrite { .. } | Violation::CounterMismatch { .. } => true,
        Violation::LostUpdate { lost, by } => {
            wrote_late(lost)
                || wrote_late(by)
                || match (lost.read, lost.write_start, by.read_at) {
                    (Some(value), Some(from), Some(until)) => {
                        rolled_back(sessions, &lost.resource, value, from, until)
                    }
                    _ => false,
                }
        }
        _ => false,
    }
}

/// Whether `violation` follows from its owner's failed extension, which
/// unlocked the hold: an extending or renewing holder that did not write
/// (an extension failed) whose hold was gone from a node, or a second
/// holder granted, after its last successful extension was sent.
pub(crate) fn failed_extend_unlock(violation: &Violation) -> bool {
    let (owner, after) = match violation {
        Violation::HoldRemoved { key, owner } => (owner, key.gone),
        Violation::Overlap { first, second } => (first, second.grant),
        _ => return false,
    };
    let since = owner.extensions.last().map_or(owner.grant, |e| Some(e.at));
    matches!(owner.holder, Holder::Extending | Holder::Renewing)
        && owner.write_start.is_none()
        && matches!((after, since), (Some(after), Some(since)) if after > since)
}

/// Whether the run's lock is rslock, whose failed extend unlocks.
fn unlocks_on_failed_extend(ran: &TortureRun) -> bool {
    ran.file.info.lock_kind == "rslock"
}

/// The violations no late writer and (for rslock) no failed extension
/// explain: the lock's own.
pub(crate) fn lock_own(ran: &TortureRun) -> Vec<&Violation> {
    let rslock = unlocks_on_failed_extend(ran);
    ran.verdict
        .violations
        .iter()
        .filter(|v| !(explained(v, &ran.file.sessions) || rslock && failed_extend_unlock(v)))
        .collect()
}

/// The summary line: `sessions=... violations=N [kind=n ...] first=T
/// failed-extend-unlock=N lock-own=N [kind=n ...] first=T`.
pub(crate) fn line(ran: &TortureRun) -> String {
    let verdict = &ran.verdict;
    let own = lock_own(ran);
    let counts = |list: &mut dyn Iterator<Item = &Violation>| {
        let mut by_kind = std::collections::BTreeMap::new();
        for v in list {
            *by_kind.entry(v.kind()).or_insert(0) += 1;
        }
        let counted: Vec<String> = by_kind.iter().map(|(k, n)| format!("{k}={n}")).collect();
        counted.join(" ")
    };
    let first = |list: &mut dyn Iterator<Item = &Violation>| {
        list.filter_map(Violation::at)
            .min()
            .map_or("-".to_owned(), |at: Duration| {
                format!("{:.1}s", at.as_secs_f64())
            })
    };
    let struck: usize = ran.exercised.faults_while_held.values().sum();
    let unlocked = if unlocks_on_failed_extend(ran) {
        verdict
            .violations
            .iter()
            .filter(|v| failed_extend_unlock(v))
            .count()
    } else {
        0
    };
    format!(
        "sessions={} granted={} completed={} struck-while-held={} violations={} [{}] first={} failed-extend-unlock={unlocked} lock-own={} [{}] first={}{}",
        ran.exercised.sessions,
        ran.exercised.granted,
        ran.exercised.completed,
        struck,
        verdict.violations.len(),
        counts(&mut verdict.violations.iter()),
        first(&mut verdict.violations.iter()),
        own.len(),
        counts(&mut own.iter().copied()),
        first(&mut own.iter().copied()),
        if ran.vacuous.is_empty() {
            String::new()
        } else {
            format!(" vacuous: {}", ran.vacuous.join("; "))
        },
    )
}

/// The first two violations the paused writer does not explain (or the
/// first two at all, when it explains every one).
pub(crate) fn examples(ran: &TortureRun) -> Vec<&Violation> {
    let own = lock_own(ran);
    if own.is_empty() {
        ran.verdict.violations.iter().take(2).collect()
    } else {
        own.into_iter().take(2).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn only_a_writer_past_its_deadline_or_its_rollback_explains_a_lost_update() {
        let mut first = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        first.read = Some(4);
        first.write_start = Some(ms(10));
        let mut second = Session::granted(1, "r", "b", ms(0), ms(101), ms(200));
        second.read = Some(4);
        second.read_at = Some(ms(110));
        let lost = Violation::LostUpdate {
            lost: Box::new(first.clone()),
            by: Box::new(second.clone()),
        };
        assert!(!explained(&lost, &[first.clone(), second.clone()]));
        // A late writer set the counter back to 4 between them.
        let mut late = Session::granted(2, "r", "c", ms(0), ms(1), ms(20));
        (late.write_start, late.write_end, late.wrote) = (Some(ms(50)), Some(ms(51)), Some(4));
        assert!(explained(
            &lost,
            &[first.clone(), second.clone(), late.clone()]
        ));
        // The same late write after the second read explains nothing.
        (late.write_start, late.write_end) = (Some(ms(150)), Some(ms(151)));
        assert!(!explained(
            &lost,
            &[first.clone(), second.clone(), late.clone()]
        ));
        // A writer whose extension covered its write was on time.
        late.extensions.push(redquorum_harness::Extension {
            at: ms(15),
            until: ms(300),
        });
        (late.write_start, late.write_end) = (Some(ms(50)), Some(ms(51)));
        assert!(!explained(&lost, &[first.clone(), second.clone(), late]));
        assert!(!failed_extend_unlock(&lost));
        let overlap = Violation::Overlap {
            first: Box::new(first),
            second: Box::new(second),
        };
        assert!(!explained(&overlap, &[]));
    }

    #[test]
    fn a_hold_gone_after_a_failed_extension_is_its_owners_unlock() {
        let mut owner = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        owner.holder = Holder::Renewing;
        owner.write_start = None;
        owner.extensions.push(redquorum_harness::Extension {
            at: ms(60),
            until: ms(160),
        });
        let key = redquorum_harness::KeyLife {
            node: 1,
            key: "k".into(),
            owner: "a".into(),
            first_seen: ms(2),
            last_seen: ms(120),
            last_sent: None,
            age: ms(50),
            left: None,
            gone: Some(ms(130)),
            back_after: None,
        };
        let removed = |owner: &Session, gone: u64| Violation::HoldRemoved {
            key: redquorum_harness::KeyLife {
                gone: Some(ms(gone)),
                ..key.clone()
            },
            owner: Box::new(owner.clone()),
        };
        assert!(failed_extend_unlock(&removed(&owner, 130)));
        // Gone before its last extension was even sent: someone else.
        assert!(!failed_extend_unlock(&removed(&owner, 50)));
        // A holder that wrote had every extension granted.
        owner.write_start = Some(ms(150));
        assert!(!failed_extend_unlock(&removed(&owner, 130)));
        owner.write_start = None;
        let mut next = Session::granted(1, "r", "b", ms(0), ms(140), ms(300));
        let overlap = |first: &Session, next: &Session| Violation::Overlap {
            first: Box::new(first.clone()),
            second: Box::new(next.clone()),
        };
        assert!(failed_extend_unlock(&overlap(&owner, &next)));
        next.grant = Some(ms(55));
        assert!(!failed_extend_unlock(&overlap(&owner, &next)));
        owner.holder = Holder::Brief;
        assert!(!failed_extend_unlock(&removed(&owner, 130)));
    }
}
