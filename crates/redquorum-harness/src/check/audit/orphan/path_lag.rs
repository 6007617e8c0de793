//! How long a loaded machine held up the path of a command that should
//! have removed a key: the client group's runtime, which sends it (and
//! reads a NOSCRIPT answer to send it again), and the fault proxy in front
//! of the key's node for that group, which forwards it and its answer.
//! Both record every late wake-up ([`RuntimeLag`]): the thread was held
//! from [`RuntimeLag::held_from`] (less one [`LAG_TICK`], when its sleep
//! began) until it woke.
//!
//! Without holds a removal reaches its node by the slack after it was due
//! (the slack covers a client that sends it late). Sent at any time in that
//! span, it may meet a hold on its path and wait for its end, then for the
//! end of a hold covering that, and so on; when the longest such chain
//! ends, the thread that was held still has its backlog to forward on the
//! machine that held it, shorter waits the meter does not record: the
//! removal reaches the node by [`CATCH_UP`] after that chain's end. The
//! orphan-key rule allows that, and no more. Holds it cannot have met
//! (over before it was due, begun after the slack, on another node's proxy
//! or another group's) do not count.

use std::time::Duration;

use crate::evidence::RuntimeLag;
use crate::lag_meter::LAG_TICK;

/// How long after the end of the holds it met a removal may still take to
/// reach its node: a proxy thread that woke from a hold of 1.2 s on a
/// starved machine forwarded an unwind it held between 224 and 354 ms
/// later (the seed-3 control of 2026-12-07, docs/torture.md). Below every
/// TTL a dropped removal's key lives by a wide margin.
pub(crate) const CATCH_UP: Duration = Duration::from_millis(500);

/// The holds of client group `group`'s path to `node`: (from, to).
fn holds_on(lags: &[RuntimeLag], node: usize, group: usize) -> Vec<(Duration, Duration)> {
    (lags.iter())
        .filter(|lag| lag.group == group && lag.node.is_none_or(|n| n == node))
        .map(|lag| (lag.held_from().saturating_sub(LAG_TICK), lag.at))
        .collect()
}

/// When a command still waiting at `at` leaves the chain of holds that
/// covers it (`at` itself when none does).
fn chain_end(holds: &[(Duration, Duration)], at: Duration) -> Duration {
    let mut until = at;
    while let Some(end) = (holds.iter())
        .filter(|&&(from, to)| from <= until && until < to)
        .map(|&(_, to)| to)
        .max()
    {
        until = end;
    }
    until
}

/// How much later than `due` and the `slack` after it a removal on client
/// group `group`'s path to `node` may have reached the node, kept by the
/// holds it met and the [`CATCH_UP`] after them. With the group unknown,
/// the most any one group's path kept it.
pub(crate) fn path_lag(
    lags: &[RuntimeLag],
    node: usize,
    group: Option<usize>,
    due: Duration,
    slack: Duration,
) -> Duration {
    let by = due + slack;
    let lag_of = |group: usize| -> Duration {
        let holds = holds_on(lags, node, group);
        (holds.iter())
            .filter(|&&(from, to)| from <= by && to > due)
            .map(|&(_, to)| chain_end(&holds, to) + CATCH_UP)
            .max()
            .map_or(Duration::ZERO, |end| end.saturating_sub(by))
    };
    match group {
        Some(group) => lag_of(group),
        None => (lags.iter().map(|lag| lag.group))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(lag_of)
            .max()
            .unwrap_or_default(),
    }
}

/// Whether a write to `node` sent by client group `group` (any, when
/// unknown) within `sent` (an attempt's span) may have waited in a hold of
/// the proxy in front of that node and landed at `set_at`: a hold begun
/// before the attempt ended and over after it began, whose chain ended no
/// more than `slack` before `set_at`. Such a write lands after its sender
/// may have stopped sending, as one a delaying fault held back does.
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
            let landed_by = chain_end(&holds_on(lags, node, lag.group), lag.at);
            lag.held_from().saturating_sub(LAG_TICK) <= set_at && set_at <= landed_by + slack
        })
}

/// When the earliest hold of a proxy in front of `node` that may have kept
/// a write until `set_at` began ([`holds_back_write`] with any group and
/// any attempt): a write sent before it was not held by any.
pub(crate) fn earliest_write_hold(
    lags: &[RuntimeLag],
    node: usize,
    set_at: Duration,
    slack: Duration,
) -> Option<Duration> {
    (lags.iter())
        .filter(|lag| lag.node == Some(node))
        .filter(|lag| {
            let landed_by = chain_end(&holds_on(lags, node, lag.group), lag.at);
            lag.held_from().saturating_sub(LAG_TICK) <= set_at && set_at <= landed_by + slack
        })
        .map(|lag| lag.held_from().saturating_sub(LAG_TICK))
        .min()
}

/// Whether the proxy in front of `node` for client group `group` (any,
/// when unknown) was held at `at`: what a process that exited then still
/// owed that node (an `exec`'s release or unwind, cut at its exit) was
/// waiting in it, and was lost with the process.
pub(crate) fn proxy_held_at(
    lags: &[RuntimeLag],
    node: usize,
    group: Option<usize>,
    at: Duration,
) -> bool {
    (lags.iter())
        .filter(|lag| lag.node == Some(node) && group.is_none_or(|g| g == lag.group))
        .any(|lag| lag.held_from().saturating_sub(LAG_TICK) <= at && at < lag.at)
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

    const SLACK: Duration = Duration::from_secs(1);

    #[test]
    fn a_removal_waits_out_the_holds_it_met() {
        let due = ms(2000);
        // Sent by 3000 at the latest: a proxy hold from 2500 to 3600 may
        // have kept it until 3600, and its backlog forwarded by the
        // catch-up after: 1100 ms past the slack.
        let proxy = lag(1, Some(2), 2500, 3600);
        assert_eq!(path_lag(&[proxy], 2, Some(1), due, SLACK), ms(1100));
        // Then the runtime, held 3500..3900 (reading the answer to send it
        // again): until 3900, and the catch-up.
        let runtime = lag(1, None, 3500, 3900);
        assert_eq!(
            path_lag(&[proxy, runtime], 2, Some(1), due, SLACK),
            ms(1400)
        );
        // A hold that began after that chain had ended is not met.
        let later = lag(1, Some(2), 4000, 5000);
        assert_eq!(
            path_lag(&[proxy, runtime, later], 2, Some(1), due, SLACK),
            ms(1400)
        );
        // A hold that covered the due time and ended within the slack
        // costs only what its catch-up reaches past the slack.
        assert_eq!(
            path_lag(&[lag(1, Some(2), 1800, 2900)], 2, Some(1), due, SLACK),
            ms(400)
        );
        assert_eq!(
            path_lag(&[lag(1, Some(2), 1800, 2400)], 2, Some(1), due, SLACK),
            Duration::ZERO
        );
    }

    #[test]
    fn holds_it_cannot_have_met_do_not_count() {
        let due = ms(2000);
        let none = |lags: &[RuntimeLag]| path_lag(lags, 2, Some(1), due, SLACK);
        assert_eq!(
            none(&[lag(1, Some(3), 2500, 3600)]),
            Duration::ZERO,
            "another node's proxy"
        );
        assert_eq!(
            none(&[lag(2, Some(2), 2500, 3600)]),
            Duration::ZERO,
            "another group's"
        );
        assert_eq!(
            none(&[lag(1, Some(2), 900, 1900)]),
            Duration::ZERO,
            "over before it was due"
        );
        assert_eq!(
            none(&[lag(1, None, 3100, 3600)]),
            Duration::ZERO,
            "begun after the slack"
        );
        assert_eq!(none(&[]), Duration::ZERO);
    }

    #[test]
    fn with_the_group_unknown_the_longest_chain_counts() {
        let lags = [
            lag(0, Some(2), 2900, 3400),
            lag(3, Some(2), 2950, 3600),
            lag(3, None, 3500, 3700),
        ];
        assert_eq!(path_lag(&lags, 2, None, ms(2000), SLACK), ms(1200));
    }

    #[test]
    fn a_write_held_in_the_proxy_lands_when_its_holds_end() {
        // An attempt from 1000 to 2000 ms, its write set at `set_at` on
        // node 0, sent by group `group` (None: unknown).
        let held = |lags: &[RuntimeLag], node: usize, group: Option<usize>, set_at: u64| {
            holds_back_write(lags, node, group, (ms(1000), ms(2000)), ms(set_at), SLACK)
        };
        // The proxy to node 0 held from 1800 to 3300 ms: the write may land
        // by 3300 (and the slack).
        let proxy = [lag(3, Some(0), 1800, 3300)];
        assert!(held(&proxy, 0, None, 3310));
        assert!(held(&proxy, 0, None, 4200));
        assert!(
            !held(&proxy, 0, None, 4400),
            "past the slack after the hold ended"
        );
        assert!(!held(&proxy, 0, None, 1500), "set before the hold began");
        let after = [lag(3, Some(0), 2100, 3300)];
        assert!(
            !held(&after, 0, None, 3310),
            "a hold begun after the attempt ended"
        );
        assert!(!held(&proxy, 1, None, 3310), "another node's proxy");
        assert!(
            !held(&proxy, 0, Some(1), 3310),
            "another group's, the sender's known"
        );
        // A runtime's hold is not a proxy's: a write held there goes out
        // before the attempt's end is recorded.
        let runtime = [lag(3, None, 1800, 3300)];
        assert!(!held(&runtime, 0, None, 3310));
    }

    #[test]
    fn a_proxy_held_at_an_exit_is_found_on_its_node_only() {
        let lags = [lag(3, Some(1), 1500, 3100), lag(3, None, 1000, 4000)];
        assert!(proxy_held_at(&lags, 1, None, ms(2000)));
        assert!(proxy_held_at(&lags, 1, Some(3), ms(2000)));
        assert!(
            !proxy_held_at(&lags, 1, Some(2), ms(2000)),
            "another group's"
        );
        assert!(
            !proxy_held_at(&lags, 0, None, ms(2000)),
            "another node's; a runtime's is not a proxy's"
        );
        assert!(!proxy_held_at(&lags, 1, None, ms(3100)), "over by then");
        assert!(!proxy_held_at(&lags, 1, None, ms(1400)), "not begun");
    }
}
