//! The orphan-key rule (`orphan-key`): no lock key lives on after its
//! owner's attempt was unwound or its lease released. A key of a granted
//! owner seen more than the slack after its release (or its deadline), or
//! a key of a never-granted owner older than the slack, is an orphan,
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

use std::collections::HashMap;
use std::time::Duration;

use super::verdict::Evidence;
use super::violation::Violation;
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

/// Every orphan key of `evidence`; `owners` are the granted sessions by
/// owner token.
pub(super) fn orphans(evidence: &Evidence<'_>, owners: &HashMap<&str, &Session>) -> Vec<Violation> {
    let excused = |key: &KeyLife, sent: Duration, gone: bool| {
        evidence
            .faults
            .iter()
            .any(|f| explains(f, evidence.slack, key.node, sent, key.last_seen, gone))
    };
    let mut found = Vec::new();
    for key in evidence.keys {
        let orphan = match owners.get(key.owner.as_str()) {
            Some(owner) => {
                let ended = owner.release.or(owner.deadline()).unwrap_or_default();
                key.last_seen > ended + evidence.slack
                    && !excused(key, ended, owner.deadline_unseen)
            }
            None => {
                // Its unwind follows the attempt that set it.
                let set_at = key.last_seen.saturating_sub(key.age);
                key.age > evidence.slack && !excused(key, set_at, false)
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

    #[test]
    fn faults_that_neither_delay_nor_lose_commands_excuse_nothing() {
        let flush = FaultEvent::new(FaultKind::ScriptFlush, vec![0], ms(1000), ms(1000));
        assert!(!explains(&flush, SLACK, 0, ms(1000), ms(1100), false));
    }
}
