//! The orphan-key rule (`orphan-key`): no lock key lives on after its
//! owner's attempt was unwound or its lease released. A key of a granted
//! owner seen more than the slack after its release (or its deadline), or
//! a key of a never-granted owner seen more than the slack after every
//! attempt that may have set it ended (a fault around any of their ends
//! may excuse it), is an orphan,
//! unless a fault on that node explains it, and only as long as it can:
//!
//! - the fault must have been in force while the release (or unwind) was
//!   on its way to that node: from the slack before it (a client still
//!   reconnecting cannot send it) to the slack after it (a loaded client
//!   sends it late); a kill or a majority restart up to twice the slack
//!   after it (the node's log, written every second, may bring back a key
//!   deleted just before);
//! - a fault that may lose the command outright (a kill, a restart, a
//!   connection reset, a partition, a cluster fault: the release fails and
//!   the key lives to its TTL, which the leak check bounds) excuses the
//!   key for the rest of its life;
//! - a fault that only delays it (a pause, latency, a stall, a slow
//!   majority, a client pause: every byte is delivered when it heals)
//!   excuses the key only until the slack after the fault ended; a key
//!   still there later was dropped, not delayed — unless the holder ran
//!   in a process of its own that ended with its release
//!   ([`Session::deadline_unseen`]: `redquorum exec`): what it still owed
//!   a delayed node ended with it, so there the delay loses the command.
//!
//! A key counts as seen when the read that saw it was sent
//! ([`KeyLife::surely_there_at`]): its answer may come much later (a slow
//! node or proxy, a starved audit), and the key may have gone meanwhile.
//!
//! A never-granted owner's unwind is due when its attempt ended
//! ([`Session::ended`]), matched by resource and time ([`attempt_ends`]).
//! A hold in a process of its own (`exec`) is due to be released when that
//! process exited (its `ended`): its recorded release is its command's last
//! step, and `exec` releases after it.

use std::collections::HashMap;
use std::time::Duration;

use crate::check::verdict::Evidence;
use crate::check::violation::Violation;
use crate::evidence::{KeyLife, Session};
use crate::faults::{FaultEvent, FaultKind};

/// Whether `kind` may lose a command outright, not only delay it.
fn loses_commands(kind: FaultKind) -> bool {
    matches!(
        kind,
        FaultKind::Kill
            | FaultKind::RestartMajority
            | FaultKind::Reset
            | FaultKind::Partition
            | FaultKind::Migrate
            | FaultKind::Failover
            | FaultKind::LaggingFailover
    )
}

/// Whether `fault` explains a key on `node` seen at `seen`, when the
/// command that should have removed it was sent at `sent` (by a process
/// that ended with it when `sender_gone`).
pub(super) fn explains(
    fault: &FaultEvent,
    slack: Duration,
    node: usize,
    sent: Duration,
    seen: Duration,
    sender_gone: bool,
) -> bool {
    if !fault.kind.delays_commands() || !(fault.nodes.is_empty() || fault.nodes.contains(&node)) {
        return false;
    }
    let log_replay = matches!(fault.kind, FaultKind::Kill | FaultKind::RestartMajority);
    let after = if log_replay { slack * 2 } else { slack };
    if !fault.overlaps(sent.saturating_sub(slack), sent + after) {
        return false;
    }
    loses_commands(fault.kind) || sender_gone || seen <= fault.end + slack
}

/// When the attempt that set a never-granted owner's `key` may have ended,
/// for each attempt that may have set it, if any is known and later than
/// the key's set time: its unwind is due then (the lock sends it before
/// the error returns), not when the key was set — a client starved of CPU
/// ends its attempt long after its acquire landed. The attempts that may
/// have set it are the refused `sessions` on the key's resource running
/// when it was set (within a tenth of the slack: the audit's reads take
/// time); the history does not say which one did. Empty without an
/// `ended` recorded, or for a resource name the key does not show as
/// `{name}` (a lock's record and a semaphore's slot do).
fn attempt_ends(key: &KeyLife, refused: &RefusedByResource, slack: Duration) -> Vec<Duration> {
    let set_at = key.last_seen.saturating_sub(key.age);
    let read = slack / 10;
    refused
        .iter()
        .filter(|(name, _)| key.key.contains(name.as_str()))
        .flat_map(|(_, attempts)| attempts.iter())
        .filter(|(start, end)| *start <= set_at + read && *end > set_at)
        .map(|&(_, end)| end)
        .collect()
}

/// The ended attempts (start, end) by `{resource}`, built once per check:
/// a soak's keys and sessions are both in the tens of thousands.
type RefusedByResource = HashMap<String, Vec<(Duration, Duration)>>;

fn refused_by_resource(sessions: &[Session]) -> RefusedByResource {
    let mut by: RefusedByResource = HashMap::new();
    for s in sessions.iter().filter(|s| s.grant.is_none()) {
        if let Some(end) = s.ended {
            by.entry(format!("{{{}}}", s.resource))
                .or_default()
                .push((s.start, end));
        }
    }
    by
}

/// When a granted owner's keys were due to go: `(released, due)`, both its
/// release (else its deadline) — but for a hold kept by a process of its
/// own (`exec`, [`Session::deadline_unseen`]) `release` is its command's
/// last step, and the process sends its release after that, by the time it
/// exited ([`Session::ended`]): due then.
fn removal_due(owner: &Session) -> (Duration, Duration) {
    let released = owner.release.or(owner.deadline()).unwrap_or_default();
    match owner.ended {
        Some(exited) if owner.deadline_unseen => (released, released.max(exited)),
        _ => (released, released),
    }
}

/// Every orphan key of `evidence`; `owners` are the granted sessions by
/// owner token.
pub(crate) fn orphans(evidence: &Evidence<'_>, owners: &HashMap<&str, &Session>) -> Vec<Violation> {
    let excused = |key: &KeyLife, sent: Duration, gone: bool| {
        evidence.faults.iter().any(|f| {
            explains(
                f,
                evidence.slack,
                key.node,
                sent,
                key.surely_there_at(),
                gone,
            )
        })
    };
    let refused = refused_by_resource(evidence.sessions);
    let mut found = Vec::new();
    for key in evidence.keys {
        let orphan = match owners.get(key.owner.as_str()) {
            Some(owner) => {
                let (released, due) = removal_due(owner);
                key.surely_there_at() > due + evidence.slack
                    && !excused(key, due, owner.deadline_unseen)
                    && !excused(key, released, owner.deadline_unseen)
            }
            None => {
                let ends = attempt_ends(key, &refused, evidence.slack);
                match ends.iter().max() {
                    // An orphan only if it outlived every attempt that may
                    // have set it, and no fault explains it for any of them.
                    Some(&latest) => {
                        key.surely_there_at() > latest + evidence.slack
                            && !ends.iter().any(|&end| excused(key, end, false))
                    }
                    // By its age: its set time may lie before the history's start.
                    None => {
                        let set_at = key.last_seen.saturating_sub(key.age);
                        key.age > evidence.slack && !excused(key, set_at, false)
                    }
                }
            }
        };
        if orphan {
            found.push(Violation::OrphanKey {
                key: key.clone(),
                owner: owners
                    .get(key.owner.as_str())
                    .map(|s| Box::new((*s).clone())),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    const SLACK: Duration = Duration::from_secs(1);

    #[test]
    fn a_delaying_fault_excuses_only_until_the_slack_after_it_healed() {
        let stall = FaultEvent::new(FaultKind::Stall, vec![2], ms(1000), ms(1500));
        // Released during the stall: excused while the stall could hold it back.
        assert!(explains(&stall, SLACK, 2, ms(1200), ms(2400), false));
        assert!(!explains(&stall, SLACK, 2, ms(1200), ms(2600), false));
        // Another node, or a release long after the stall healed: no excuse.
        assert!(!explains(&stall, SLACK, 1, ms(1200), ms(2400), false));
        assert!(!explains(&stall, SLACK, 2, ms(2600), ms(2700), false));
        // Released by a process that ended with it (`exec`): what it owed
        // the stalled node is lost, so the key lives to its TTL.
        assert!(explains(&stall, SLACK, 2, ms(1200), ms(2600), true));
        assert!(!explains(&stall, SLACK, 1, ms(1200), ms(2600), true));
    }

    #[test]
    fn a_fault_that_loses_the_release_excuses_the_key_to_its_ttl() {
        let reset = FaultEvent::new(FaultKind::Reset, vec![0], ms(1000), ms(1000));
        assert!(explains(&reset, SLACK, 0, ms(1500), ms(3400), false));
        // Struck once, long before the release: no longer an excuse.
        assert!(!explains(&reset, SLACK, 0, ms(2500), ms(3400), false));
        // A kill may bring back, from its log, a key deleted before it.
        let kill = FaultEvent::new(FaultKind::Kill, vec![0], ms(2800), ms(3000));
        assert!(explains(&kill, SLACK, 0, ms(1000), ms(3900), false));
        assert!(!explains(&kill, SLACK, 0, ms(500), ms(3900), false));
    }

    /// A never-granted owner's key on `{r}`, set at `set` ms, last seen at `seen`.
    fn unwound(set: u64, seen: u64) -> KeyLife {
        KeyLife {
            node: 0,
            key: "p:{r}".into(),
            owner: "never-granted".into(),
            first_seen: ms(set),
            last_seen: ms(seen),
            last_sent: None,
            age: ms(seen - set),
            gone: None,
            back_after: None,
        }
    }

    /// A refused attempt on `resource` from `start` to `ended` ms.
    fn refused(resource: &str, start: u64, ended: Option<u64>) -> Session {
        let mut session = Session::refused(0, resource, ms(start), "unavailable");
        session.ended = ended.map(ms);
        session
    }

    fn orphan_count(key: KeyLife, sessions: &[Session]) -> usize {
        let protected = std::collections::BTreeMap::new();
        let keys = [key];
        let evidence = Evidence {
            keys: &keys,
            ..Evidence::new(sessions, &protected)
        };
        orphans(&evidence, &HashMap::new()).len()
    }

    #[test]
    fn an_unwound_key_may_live_the_slack_after_its_attempt_ended() {
        // Set at 100 ms by an attempt that ended (starved) at 1500 ms.
        let late = [refused("r", 50, Some(1500))];
        assert_eq!(orphan_count(unwound(100, 2400), &late), 0);
        // Still there more than the slack after the attempt ended: never unwound.
        assert_eq!(orphan_count(unwound(100, 2600), &late), 1);
        // Set before the history began, no attempt known: by its age.
        let older = KeyLife {
            age: ms(1200),
            ..unwound(0, 50)
        };
        assert_eq!(orphan_count(older, &[]), 1);
    }

    #[test]
    fn only_an_attempt_on_the_resource_running_when_the_key_was_set_moves_the_due_time() {
        let set_after_it = [refused("r", 50, Some(90)), refused("r", 300, Some(2000))];
        let other_resource = [refused("s", 50, Some(2000))];
        let unknown_end = [refused("r", 50, None)];
        // A semaphore's slot key names its resource too.
        let slot = KeyLife {
            key: "p:{r}:slot:1".into(),
            ..unwound(100, 2400)
        };
        assert_eq!(orphan_count(slot, &[refused("r", 50, Some(1500))]), 0);
        for sessions in [&set_after_it[..], &other_resource, &unknown_end, &[]] {
            // Measured from the set time, as without a known attempt.
            assert_eq!(
                orphan_count(unwound(100, 1050), sessions),
                0,
                "{sessions:?}"
            );
            assert_eq!(
                orphan_count(unwound(100, 1200), sessions),
                1,
                "{sessions:?}"
            );
        }
    }

    #[test]
    fn a_fault_around_the_end_of_any_attempt_that_may_have_set_the_key_excuses_it() {
        // Two attempts were running when the key was set at 100 ms: one
        // ended at 200 ms, during a reset of its node (its unwind lost),
        // one ended (starved) at 1500 ms, long after the reset.
        let attempts = [refused("r", 50, Some(200)), refused("r", 60, Some(1500))];
        let reset = FaultEvent::new(FaultKind::Reset, vec![0], ms(150), ms(250));
        let (keys, protected) = ([unwound(100, 2600)], std::collections::BTreeMap::new());
        let found = |faults: &[FaultEvent]| {
            let evidence = Evidence {
                keys: &keys,
                faults,
                ..Evidence::new(&attempts, &protected)
            };
            orphans(&evidence, &HashMap::new()).len()
        };
        assert_eq!(found(&[reset]), 0);
        // Without the reset it outlived both attempts: never unwound.
        assert_eq!(found(&[]), 1);
    }

    /// A granted hold of owner `x` on `r` whose use ended (`release`) at
    /// 1000 ms, recorded as ended at 2000 ms.
    fn used_until_1000_ended_at_2000(in_own_process: bool) -> Session {
        let mut s = Session::granted(0, "r", "x", ms(0), ms(10), ms(1000));
        s.release = Some(ms(1000));
        s.ended = Some(ms(2000));
        s.deadline_unseen = in_own_process;
        s
    }

    fn key_of_x(seen: u64) -> KeyLife {
        KeyLife {
            owner: "x".into(),
            ..unwound(10, seen)
        }
    }

    #[test]
    fn a_hold_in_a_process_of_its_own_is_due_to_go_when_that_process_exited() {
        let found = |owner: &Session, key: KeyLife| {
            let (keys, protected) = ([key], std::collections::BTreeMap::new());
            let sessions = [owner.clone()];
            let evidence = Evidence {
                keys: &keys,
                ..Evidence::new(&sessions, &protected)
            };
            let owners = [("x", owner)].into_iter().collect();
            orphans(&evidence, &owners).len()
        };
        // `exec` releases after its command's last step: by its exit.
        let exec = used_until_1000_ended_at_2000(true);
        assert_eq!(found(&exec, key_of_x(2900)), 0);
        assert_eq!(found(&exec, key_of_x(3100)), 1);
        // A holder in the harness's own process released at `release`.
        let local = used_until_1000_ended_at_2000(false);
        assert_eq!(found(&local, key_of_x(2100)), 1);
    }

    #[test]
    fn a_key_counts_as_seen_when_the_read_that_saw_it_was_sent() {
        let local = used_until_1000_ended_at_2000(false);
        let found = |key: KeyLife| {
            let (keys, protected) = ([key], std::collections::BTreeMap::new());
            let sessions = [local.clone()];
            let evidence = Evidence {
                keys: &keys,
                ..Evidence::new(&sessions, &protected)
            };
            orphans(&evidence, &[("x", &local)].into_iter().collect()).len()
        };
        // Answered at 2600 ms, more than the slack after the release at
        // 1000 ms, by a read sent at 1900 ms: it may have gone at 1901.
        let slow_read = KeyLife {
            last_sent: Some(ms(1900)),
            ..key_of_x(2600)
        };
        assert_eq!(found(slow_read), 0);
        // Sent at 2100 ms: surely there past the slack.
        let late = KeyLife {
            last_sent: Some(ms(2100)),
            ..key_of_x(2600)
        };
        assert_eq!(found(late), 1);
    }

    #[test]
    fn a_granted_holds_end_does_not_move_a_never_granted_keys_due_time() {
        let granted = used_until_1000_ended_at_2000(true);
        assert_eq!(orphan_count(unwound(100, 1200), &[granted]), 1);
    }

    #[test]
    fn faults_that_neither_delay_nor_lose_commands_excuse_nothing() {
        let flush = FaultEvent::new(FaultKind::ScriptFlush, vec![0], ms(1000), ms(1000));
        assert!(!explains(&flush, SLACK, 0, ms(1000), ms(1100), false));
    }
}
