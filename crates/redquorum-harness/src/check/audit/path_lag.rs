//! How long a loaded machine held up the path of a command that should
//! have removed a key: the client group's runtime, which sends it, and the
//! fault proxy in front of the key's node for that group, which forwards
//! it and its answer. Both record every late wake-up ([`RuntimeLag`]); a
//! command sent while one of them was held waits that much longer, so the
//! orphan-key rule allows that much more than its slack — only as much as
//! was measured, on that path, in that span.

use std::time::Duration;

use crate::evidence::RuntimeLag;

/// The time the path from client group `group` to `node` was held up
/// within `span` (from when the command was due, to when the key was
/// seen): each hold's part in the span, summed, since each delays whatever
/// waits behind it. With the group unknown, the most any one group's path
/// was held.
pub(crate) fn path_lag(
    lags: &[RuntimeLag],
    node: usize,
    group: Option<usize>,
    (from, to): (Duration, Duration),
) -> Duration {
    let held_on = |group: usize| -> Duration {
        (lags.iter())
            .filter(|lag| lag.group == group && lag.node.is_none_or(|n| n == node))
            .map(|lag| lag.at.min(to).saturating_sub(lag.held_from().max(from)))
            .sum()
    };
    match group {
        Some(group) => held_on(group),
        None => (lags.iter().map(|lag| lag.group))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .map(held_on)
            .max()
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn lag(group: usize, node: Option<usize>, at: u64, late: u64) -> RuntimeLag {
        RuntimeLag {
            group,
            node,
            at: ms(at),
            late: ms(late),
        }
    }

    #[test]
    fn only_the_holds_on_the_path_and_in_the_span_count() {
        let lags = [
            lag(1, Some(2), 3000, 1200), // group 1's proxy to node 2, held 1800..3000
            lag(1, None, 2500, 300),     // group 1's runtime, held 2200..2500
            lag(1, Some(3), 2600, 900),  // another node's proxy
            lag(2, Some(2), 2600, 900),  // another group's proxy
            lag(1, Some(2), 900, 400),   // before the span
        ];
        let span = (ms(2000), ms(3100));
        // 1000 of the proxy's hold fall in the span, and the runtime's 300.
        assert_eq!(path_lag(&lags, 2, Some(1), span), ms(1300));
        assert_eq!(path_lag(&lags, 4, Some(1), span), ms(300));
        assert_eq!(path_lag(&lags, 2, Some(3), span), Duration::ZERO);
        // Only a hold's part in the span counts.
        assert_eq!(
            path_lag(&[lag(1, None, 2100, 500)], 2, Some(1), span),
            ms(100)
        );
        assert_eq!(
            path_lag(&[lag(1, None, 3500, 600)], 2, Some(1), span),
            ms(200)
        );
        assert_eq!(
            path_lag(&[lag(1, None, 3600, 300)], 2, Some(1), span),
            Duration::ZERO
        );
    }

    #[test]
    fn with_the_group_unknown_the_most_held_group_counts() {
        let lags = [
            lag(0, Some(2), 2500, 400),
            lag(3, Some(2), 2600, 700),
            lag(3, None, 2700, 100),
        ];
        assert_eq!(path_lag(&lags, 2, None, (ms(2000), ms(3000))), ms(700));
        assert_eq!(path_lag(&[], 2, None, (ms(2000), ms(3000))), Duration::ZERO);
    }
}
