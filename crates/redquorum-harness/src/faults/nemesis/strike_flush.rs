//! The `script-flush` strike (`strike.rs`): the targets' proxies flush
//! the script cache ahead of calls in flight, the nemesis flushes it every
//! 0–100 ms, and the fault then reports how long the proxies held answers
//! back meanwhile (the excuse of `check/audit/excuse.rs` is bounded by it).
//! Half the flushes of a minority also slow the other nodes' replies (a
//! majority, logged as a `slow-majority` of its own), so that the flushed
//! nodes' answers, split and sent again, come before the rest and count.

use std::time::{Duration, Instant};

use rand::Rng;

use super::{Striker, nap};
use crate::faults::net::{OVERTAKE_WITHIN, ProxyMode};

/// How long a script flush waits, once healed, for its proxies' holds to end.
const HOLD_WAIT: Duration = Duration::from_secs(2);

impl Striker<'_> {
    /// The script caches emptied before one call by digest in three and
    /// every batch of operations through the targets' proxies (`aim.rs`),
    /// and every 0–100 ms, for the fault's length.
    /// With the `slowed` nodes' replies held back meanwhile
    /// ([`slowed_beside_flush`](Self::slowed_beside_flush)).
    pub(super) fn script_flush(
        &mut self,
        targets: &[usize],
        slowed: &[usize],
        length: Duration,
    ) -> Result<(), String> {
        // Aimed at calls: each answers NOSCRIPT while the client's other
        // calls are in flight, so both resend paths run many times a minute.
        for &n in targets {
            self.proxies.get(n).set_mode(ProxyMode::FlushScripts);
        }
        // Past a split batch's answer (held up to OVERTAKE_WITHIN for the
        // client's next call) and its resend; below the node timeout, as a
        // slow majority's.
        let least = OVERTAKE_WITHIN * 2;
        for &n in slowed {
            let delay = self
                .rng
                .gen_range(least..=self.config.majority_latency.max(least));
            self.proxies.get(n).set_mode(ProxyMode::SlowReplies(delay));
        }
        let storm = self.flush_storm(targets, length);
        for &n in targets.iter().chain(slowed) {
            self.proxies.get(n).heal();
        }
        storm
    }

    /// For half the flushes of a minority of the nodes, the other nodes (a
    /// majority): with their replies slowed, a quorum waits for theirs, so
    /// a flushed node's answer (split, sent again) comes before its
    /// attempt is decided and counts. Otherwise the others answer first,
    /// and a vote misread from a split answer (an acquire given another
    /// operation's `1`) almost always came after its attempt was decided:
    /// 2 in 27 in a 30 s run on flushes alone (docs/torture.md). Every
    /// node's replies stay below the node timeout and none loses a key:
    /// within the assumptions.
    pub(super) fn slowed_beside_flush(&mut self, targets: &[usize]) -> Vec<usize> {
        let others: Vec<usize> = (self.nodes.iter().copied())
            .filter(|n| !targets.contains(n))
            .collect();
        if others.len() > self.cluster.len() / 2 && self.rng.gen_bool(0.5) {
            others
        } else {
            Vec::new()
        }
    }

    /// The longest the targets' proxies held an answer back since the last
    /// fault, once every hold has ended (after [`HOLD_WAIT`] at most,
    /// which is then the figure: a lower bound, so the excuse stays short).
    pub(super) fn answers_held(&self, targets: &[usize]) -> Duration {
        (targets.iter())
            .map(|&n| {
                self.proxies
                    .get(n)
                    .take_longest_hold(HOLD_WAIT)
                    .unwrap_or(HOLD_WAIT)
            })
            .max()
            .unwrap_or_default()
    }

    /// Flushes every 0–100 ms for `length`.
    fn flush_storm(&mut self, targets: &[usize], length: Duration) -> Result<(), String> {
        // A storm, not one flush: a NOSCRIPT resend that lands after
        // the caller's unwind needs another call to have reloaded the
        // script in between, which one flush rarely gives.
        let until = Instant::now() + length;
        loop {
            for &n in targets {
                self.cluster.flush_scripts(n).map_err(|e| e.to_string())?;
            }
            let gap = Duration::from_millis(self.rng.gen_range(0..=100));
            if Instant::now() + gap >= until || !nap(gap, self.stop) {
                return Ok(());
            }
        }
    }
}
