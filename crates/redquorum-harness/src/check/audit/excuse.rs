//! The fault excuse of a key that outlived the command that should have
//! removed it (a release, an unwind): which fault, on which node, could
//! have held that command back, and for how long. Shared by the
//! `orphan-key` rule (`orphan.rs`) and the inspection's promise not to
//! name an unwound attempt (`check/operator.rs`).

use std::time::Duration;

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

/// Who sent the command that should have removed a key: whether its
/// process ended with it (`redquorum exec`), and its client group, when
/// known (a client fault, a partition or a client pause, holds back only
/// its own group's commands).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sender {
    pub(crate) gone: bool,
    pub(crate) group: Option<usize>,
}

/// Whether `fault` explains a key on `node` seen at `seen`, when the
/// command that should have removed it was sent at some time within `sent`
/// (earliest, latest: an attempt among several of one waiting acquire was
/// unwound before the next one, and the history knows only when the
/// acquire began and ended) by `sender`.
///
/// A fault that only delays commands excuses the key until the slack after
/// it healed — unless `late_write` gives the span in which the key's own
/// write may have landed and the fault may have held that write back (in
/// force then, or healed less than the slack before): a client that gave
/// up on a slow connection sends what follows on a new one (the lock
/// reconnects), so the unwind may overtake the late write, which then
/// lives its whole TTL. Given for a never-granted attempt's key only: a
/// granted holder's release comes long after its write landed.
///
/// A fault that held answers back ([`FaultEvent::held_answers`]: a script
/// flush whose proxy loads the scripts back before it forwards a NOSCRIPT
/// answer) delays a removal that had to be sent again after its NOSCRIPT,
/// or that waited behind held answers for a free call, until the slack
/// after the fault healed plus the longest hold it measured. It never
/// holds a write back.
pub(crate) fn explains(
    fault: &FaultEvent,
    slack: Duration,
    node: usize,
    ((sent_from, sent), seen): ((Duration, Duration), Duration),
    late_write: Option<(Duration, Duration)>,
    sender: Sender,
) -> bool {
    let held_answers = fault.held_answers.filter(|held| !held.is_zero());
    let delays = fault.kind.delays_commands();
    if !(delays || held_answers.is_some())
        || !(fault.nodes.is_empty() || fault.nodes.contains(&node))
    {
        return false;
    }
    if let (Some(struck), Some(group)) = (fault.group, sender.group)
        && struck != group
    {
        return false;
    }
    let log_replay = matches!(fault.kind, FaultKind::Kill | FaultKind::RestartMajority);
    let after = if log_replay { slack * 2 } else { slack };
    if !fault.overlaps(sent_from.saturating_sub(slack), sent + after) {
        return false;
    }
    if !delays {
        let held = held_answers.unwrap_or_default();
        return sender.gone || seen <= fault.end + held + slack;
    }
    let set_late =
        late_write.is_some_and(|(from, to)| from <= fault.end + slack && to >= fault.start);
    loses_commands(fault.kind) || sender.gone || set_late || seen <= fault.end + slack
}

/// Whether `fault` may have held back, until `set_at`, a write to `node`
/// sent at some time within `sent` (an attempt's span): a fault that
/// delays commands, on that node, in force while the attempt ran, and the
/// write landing while it was in force or within the slack after it
/// healed. (A fault that held only answers back never held a write.)
pub(crate) fn holds_back_write(
    fault: &FaultEvent,
    slack: Duration,
    node: usize,
    (sent_from, sent): (Duration, Duration),
    set_at: Duration,
) -> bool {
    fault.overlaps(sent_from, sent) && may_hold_write_until(fault, slack, node, set_at)
}

/// Whether `fault` may have held back a write to `node` (sent while it
/// was in force) until `set_at`: [`holds_back_write`] without the send.
pub(crate) fn may_hold_write_until(
    fault: &FaultEvent,
    slack: Duration,
    node: usize,
    set_at: Duration,
) -> bool {
    fault.kind.delays_commands()
        && (fault.nodes.is_empty() || fault.nodes.contains(&node))
        && fault.start <= set_at
        && set_at <= fault.end + slack
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    const SLACK: Duration = Duration::from_secs(1);
    /// A key whose own write no fault below held back.
    const EARLY: Option<(Duration, Duration)> = None;

    /// Whether `fault` on `node` excuses a key seen at `seen` ms whose
    /// removal was sent at `sent` ms by a sender of no known group (`gone`:
    /// its process ended with it).
    fn excused(fault: &FaultEvent, node: usize, sent: u64, seen: u64, gone: bool) -> bool {
        let sender = Sender { gone, group: None };
        explains(
            fault,
            SLACK,
            node,
            ((ms(sent), ms(sent)), ms(seen)),
            EARLY,
            sender,
        )
    }

    #[test]
    fn a_delaying_fault_excuses_only_until_the_slack_after_it_healed() {
        let stall = FaultEvent::new(FaultKind::Stall, vec![2], ms(1000), ms(1500));
        // Released during the stall: excused while the stall could hold it back.
        assert!(excused(&stall, 2, 1200, 2400, false));
        assert!(!excused(&stall, 2, 1200, 2600, false));
        // Another node, or a release long after the stall healed: no excuse.
        assert!(!excused(&stall, 1, 1200, 2400, false));
        assert!(!excused(&stall, 2, 2600, 2700, false));
        // Released by a process that ended with it (`exec`): what it owed
        // the stalled node is lost, so the key lives to its TTL.
        assert!(excused(&stall, 2, 1200, 2600, true));
        assert!(!excused(&stall, 1, 1200, 2600, true));
    }

    #[test]
    fn a_fault_that_loses_the_release_excuses_the_key_to_its_ttl() {
        let reset = FaultEvent::new(FaultKind::Reset, vec![0], ms(1000), ms(1000));
        assert!(excused(&reset, 0, 1500, 3400, false));
        // Struck once, long before the release: no longer an excuse.
        assert!(!excused(&reset, 0, 2500, 3400, false));
        // A kill may bring back, from its log, a key deleted before it.
        let kill = FaultEvent::new(FaultKind::Kill, vec![0], ms(2800), ms(3000));
        assert!(excused(&kill, 0, 1000, 3900, false));
        assert!(!excused(&kill, 0, 500, 3900, false));
    }

    #[test]
    fn faults_that_neither_delay_nor_lose_commands_excuse_nothing() {
        let flush = FaultEvent::new(FaultKind::ScriptFlush, vec![0], ms(1000), ms(1000));
        assert!(!excused(&flush, 0, 1000, 1100, false));
        // A flush whose proxy held no answer back (none said NOSCRIPT).
        let mut quiet = FaultEvent::new(FaultKind::ScriptFlush, vec![0], ms(1000), ms(1500));
        quiet.held_answers = Some(Duration::ZERO);
        assert!(!excused(&quiet, 0, 1200, 1300, false));
    }

    #[test]
    fn answers_held_back_excuse_a_removal_for_the_longest_hold_after_the_slack() {
        let mut flush = FaultEvent::new(FaultKind::ScriptFlush, vec![1], ms(1000), ms(1500));
        flush.held_answers = Some(ms(600));
        // Released during the flush: on its way by 1500 + 600 ms, seen
        // within the slack after that.
        assert!(excused(&flush, 1, 1200, 3000, false));
        assert!(!excused(&flush, 1, 1200, 3200, false));
        // Another node, or a release long after the flush: no excuse.
        assert!(!excused(&flush, 0, 1200, 2000, false));
        assert!(!excused(&flush, 1, 2600, 2700, false));
        // `exec`'s process ended before its held removal went again.
        assert!(excused(&flush, 1, 1200, 3200, true));
        // It held answers, never writes: a never-granted attempt's key
        // set during it is excused no longer than any removal.
        let set_during = Some((ms(1100), ms(1100)));
        let late = |seen| {
            explains(
                &flush,
                SLACK,
                1,
                ((ms(1200), ms(1200)), ms(seen)),
                set_during,
                Sender::default(),
            )
        };
        assert!(late(3000));
        assert!(!late(3200));
    }

    #[test]
    fn a_client_fault_excuses_only_its_own_groups_commands() {
        // Group 1 cut off from node 0 while a removal was on its way there.
        let mut partition = FaultEvent::new(FaultKind::Partition, vec![0], ms(1000), ms(1500));
        partition.group = Some(1);
        let from = |group| Sender {
            gone: false,
            group: Some(group),
        };
        assert!(explains(
            &partition,
            SLACK,
            0,
            ((ms(1200), ms(1200)), ms(2400)),
            EARLY,
            from(1)
        ));
        assert!(!explains(
            &partition,
            SLACK,
            0,
            ((ms(1200), ms(1200)), ms(2400)),
            EARLY,
            from(2)
        ));
        // A sender whose group is not known may be the one cut off.
        assert!(explains(
            &partition,
            SLACK,
            0,
            ((ms(1200), ms(1200)), ms(2400)),
            EARLY,
            Sender::default()
        ));
    }

    #[test]
    fn a_key_a_delaying_fault_may_have_set_late_is_excused_for_its_life() {
        let latency = FaultEvent::new(FaultKind::Latency, vec![2], ms(400), ms(700));
        let (sent, seen) = ((ms(1500), ms(1500)), ms(3100));
        // Set at 0 ms: the latency only delayed the removal, long healed.
        assert!(!explains(
            &latency,
            SLACK,
            2,
            (sent, seen),
            EARLY,
            Sender::default()
        ));
        // Set at 1150 ms, within the slack after the latency healed: a write
        // it held back, which a removal sent on a new connection overtook.
        let late = Some((ms(1150), ms(1150)));
        assert!(explains(
            &latency,
            SLACK,
            2,
            (sent, seen),
            late,
            Sender::default()
        ));
        // Set long after the latency healed: not its doing.
        let after = Some((ms(1800), ms(1800)));
        assert!(!explains(
            &latency,
            SLACK,
            2,
            (sent, seen),
            after,
            Sender::default()
        ));
    }

    #[test]
    fn a_fault_around_any_time_the_removal_may_have_been_sent_excuses() {
        // One attempt of a waiting acquire from 1000 to 4000 ms: its unwind
        // went out some time in between, so a reset at 1200 ms may have
        // lost it, though it lies more than the slack before the end.
        let reset = FaultEvent::new(FaultKind::Reset, vec![0], ms(1200), ms(1200));
        let seen = ms(6000);
        let span = ((ms(1000), ms(4000)), seen);
        assert!(explains(&reset, SLACK, 0, span, EARLY, Sender::default()));
        let at_the_end = ((ms(4000), ms(4000)), seen);
        assert!(!explains(
            &reset,
            SLACK,
            0,
            at_the_end,
            EARLY,
            Sender::default()
        ));
    }
}
