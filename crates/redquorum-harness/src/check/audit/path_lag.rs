//! How long a loaded machine held up the path of a command that should
//! have removed a key: the client group's runtime, which sends it (and
//! reads a NOSCRIPT answer to send it again), and the fault proxy in front
//! of the key's node for that group, which forwards it and its answer.
//! Both record every late wake-up ([`RuntimeLag`]): the thread was held
//! from [`RuntimeLag::held_from`] (less one [`LAG_TICK`], when its sleep
//! began) until it woke. A command on its way when its path was due is
//! delayed by the hold it met, then by the next one it met when that hold
//! ended, and so on: the orphan-key rule allows that chain, measured on
//! that path from that time, and no more. Holds the command did not meet
//! (before its due time, after the chain broke, on another node's proxy
//! or another group's) do not count.

use std::time::Duration;

use crate::evidence::{LAG_TICK, RuntimeLag};

/// How long after `due` a command on client group `group`'s path to
/// `node` may have been kept by the holds it met one after another. With
/// the group unknown, the longest any one group's path was.
pub(crate) fn path_lag(
    lags: &[RuntimeLag],
    node: usize,
    group: Option<usize>,
    due: Duration,
) -> Duration {
    let chain_of = |group: usize| -> Duration {
        let holds: Vec<(Duration, Duration)> = (lags.iter())
            .filter(|lag| lag.group == group && lag.node.is_none_or(|n| n == node))
            .map(|lag| (lag.held_from().saturating_sub(LAG_TICK), lag.at))
            .collect();
        let mut until = due;
        // Each step moves `until` to the end of a hold that covers it.
        while let Some(end) = (holds.iter())
            .filter(|&&(from, to)| from <= until && until < to)
            .map(|&(_, to)| to)
            .max()
        {
            until = end;
        }
        until - due
    };
    match group {
        Some(group) => chain_of(group),
        None => (lags.iter().map(|lag| lag.group))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(chain_of)
            .max()
            .unwrap_or_default(),
    }
}

/// Whether a write to `node` sent by client group `group` (any, when
/// unknown) within `sent` (an attempt's span) may have waited in a hold of
/// the proxy in front of that node and landed at `set_at`: a hold begun
/// before the attempt ended and over after it began, whose chain
/// ([`path_lag`]) ended no more than `slack` before `set_at`. Such a write
/// lands after its sender may have stopped sending, as one a delaying fault
/// held back does.
pub(crate) fn holds_back_write(
    lags: &[RuntimeLag],
    node: usize,
    group: Option<usize>,
    (start, end): (Duration, Duration),
    set_at: Duration,
    slack: Duration,
) -> bool {
    (lags.iter())
        .filter(|lag| lag.node == Some(node) && group.is_none_or(|g| g == lag.group))
        .filter(|lag| lag.held_from().saturating_sub(LAG_TICK) <= end && lag.at >= start)
        .any(|lag| {
            let landed_by = lag.at + path_lag(lags, node, Some(lag.group), lag.at);
            lag.held_from().saturating_sub(LAG_TICK) <= set_at && set_at <= landed_by + slack
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    /// `group`'s path (its proxy to `node`, or its runtime) held from
    /// `from` (its sleep began `LAG_TICK` earlier) to `to` ms.
    fn lag(group: usize, node: Option<usize>, from: u64, to: u64) -> RuntimeLag {
        RuntimeLag {
            group,
            node,
            at: ms(to),
            late: ms(to - from) - LAG_TICK,
        }
    }

    #[test]
    fn a_command_waits_out_the_hold_it_met_and_those_that_follow() {
        let due = ms(2000);
        // The proxy to node 2 held 1800..3000: the command waits until 3000.
        let proxy = lag(1, Some(2), 1800, 3000);
        assert_eq!(path_lag(&[proxy], 2, Some(1), due), ms(1000));
        // Then the runtime, held 2900..3400 (reading the answer to send it
        // again): until 3400.
        let runtime = lag(1, None, 2900, 3400);
        assert_eq!(path_lag(&[proxy, runtime], 2, Some(1), due), ms(1400));
        // A hold that began after the chain had ended is not met.
        let later = lag(1, Some(2), 3500, 4500);
        assert_eq!(
            path_lag(&[proxy, runtime, later], 2, Some(1), due),
            ms(1400)
        );
    }

    #[test]
    fn holds_off_the_path_or_before_the_due_time_do_not_count() {
        let due = ms(2000);
        assert_eq!(
            path_lag(&[lag(1, Some(3), 1800, 3000)], 2, Some(1), due),
            Duration::ZERO
        );
        assert_eq!(
            path_lag(&[lag(2, Some(2), 1800, 3000)], 2, Some(1), due),
            Duration::ZERO
        );
        assert_eq!(
            path_lag(&[lag(1, Some(2), 900, 1900)], 2, Some(1), due),
            Duration::ZERO
        );
        // Begun after the due time: the command had gone by then.
        assert_eq!(
            path_lag(&[lag(1, None, 2200, 2500)], 2, Some(1), due),
            Duration::ZERO
        );
        assert_eq!(path_lag(&[], 2, Some(1), due), Duration::ZERO);
    }

    #[test]
    fn with_the_group_unknown_the_longest_chain_counts() {
        let lags = [
            lag(0, Some(2), 1900, 2400),
            lag(3, Some(2), 1950, 2600),
            lag(3, None, 2500, 2700),
        ];
        assert_eq!(path_lag(&lags, 2, None, ms(2000)), ms(700));
    }

    #[test]
    fn a_write_held_in_the_proxy_lands_when_its_holds_end() {
        let slack = ms(1000);
        // An attempt from 1000 to 2000 ms; the proxy to node 0 held from
        // 1800 to 3300 ms: its write may land by 3300 (and the slack).
        let lags = [lag(3, Some(0), 1800, 3300)];
        let held =
            |set_at: u64| holds_back_write(&lags, 0, None, (ms(1000), ms(2000)), ms(set_at), slack);
        assert!(held(3310));
        assert!(held(4200));
        assert!(!held(4400), "past the slack after the hold ended");
        assert!(!held(1500), "set before the hold began: not held by it");
        // A hold begun after the attempt ended held none of its writes.
        let after = [lag(3, Some(0), 2100, 3300)];
        assert!(!holds_back_write(
            &after,
            0,
            None,
            (ms(1000), ms(2000)),
            ms(3310),
            slack
        ));
        // Another node's proxy, or another group's when the sender's is known.
        assert!(!holds_back_write(
            &lags,
            1,
            None,
            (ms(1000), ms(2000)),
            ms(3310),
            slack
        ));
        assert!(!holds_back_write(
            &lags,
            0,
            Some(1),
            (ms(1000), ms(2000)),
            ms(3310),
            slack
        ));
        // The runtime's hold is not a proxy's: a write held there goes out
        // before the attempt's end is recorded.
        let runtime = [lag(3, None, 1800, 3300)];
        assert!(!holds_back_write(
            &runtime,
            0,
            None,
            (ms(1000), ms(2000)),
            ms(3310),
            slack
        ));
    }
}
