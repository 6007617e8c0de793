//! Which nodes a `fence-loss` may strike: those whose clock leads.
//!
//! A node that lost its fence counter proposes from its clock
//! (`node_ms × 1024`, docs/fencing.md), which is above an earlier token `T`
//! only if the node's clock, when it proposes, is past every clock reading
//! `T` may have come from. A reading from `e` ms ago counts as `e` ms lower
//! (real time moved on since), so the nemesis keeps a *decaying high-water
//! mark* of the nodes' clock offsets (node clock minus real time, measured
//! with `TIME`), raised by every sample and by every strobe's forward step,
//! and lets fence-loss strike only where the next quorum meets a node whose
//! offset is at the mark (within a tolerance), whose own clock is ahead of
//! every token issued before, or a node that kept its counter
//! ([`fence_loss_targets`]). Leading in the default run: the fast
//! majority, whose clocks run alike from the cluster's start (a restart
//! keeps a fast node's lead: the harness's fast clocks are the machine's,
//! not the process's); without clock faults, every node. A node whose
//! clock came back behind its old readings (a strobe's step back) leads
//! again only once real time has passed them: the mark remembers them.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::Rng;

use crate::nodes::Cluster;

/// How far below the high-water mark a node's offset may be and still lead:
/// below the time between one holder's grant and the next holder's acquire
/// reaching a node (a write-back, a release and an acquire: three round
/// trips, and the fence-loss itself in between).
pub(super) const TOLERANCE_MS: f64 = 2.0;

/// A `TIME` sample whose round trip took longer than this is not precise
/// enough to place a node within the tolerance (its error is half of it).
const PRECISE: Duration = Duration::from_millis(2);

/// The decaying high-water mark of the nodes' clock offsets.
#[derive(Debug, Default)]
pub(super) struct ClockLeads {
    /// The mark's offset (ms) and when it was set; it decays 1 ms per ms.
    mark: Option<(Instant, f64)>,
}

impl ClockLeads {
    /// The mark at `now`: the highest offset seen, less the time since.
    pub(super) fn mark_at(&self, now: Instant) -> f64 {
        self.mark.map_or(f64::NEG_INFINITY, |(at, offset)| {
            offset - now.saturating_duration_since(at).as_secs_f64() * 1e3
        })
    }

    /// Raises the mark with an offset (ms) seen at `now`.
    pub(super) fn observe(&mut self, offset: f64, now: Instant) {
        let mark = self.mark_at(now).max(offset);
        self.mark = Some((now, mark));
    }

    /// The nodes of `offsets` (node, offset in ms, all measured at `now`)
    /// that lead: at the mark within [`TOLERANCE_MS`], after the mark has
    /// taken them in.
    pub(super) fn leading(&mut self, offsets: &[(usize, f64)], now: Instant) -> Vec<usize> {
        for &(_, offset) in offsets {
            self.observe(offset, now);
        }
        let mark = self.mark_at(now);
        offsets
            .iter()
            .filter(|(_, offset)| *offset >= mark - TOLERANCE_MS)
            .map(|&(node, _)| node)
            .collect()
    }
}

/// The nodes a fence-loss strikes, given the `leading` ones among the
/// `nodes` that may be faulted, of `count` in all: when the leading nodes
/// are a majority, all of them and any of the others (every quorum then
/// meets a leading node that lost its counter and proposes from its clock,
/// above every earlier token, whatever the others propose); otherwise a
/// majority or more of the leading ones only (a node the next quorum
/// shares with the last write-back either kept its counter or leads).
pub(super) fn fence_loss_targets(
    rng: &mut impl Rng,
    leading: &[usize],
    nodes: &[usize],
    count: usize,
) -> Vec<usize> {
    let mut targets: Vec<usize> = if leading.len() > count / 2 {
        let others = nodes.iter().filter(|n| !leading.contains(n));
        let others: Vec<usize> = others.copied().filter(|_| rng.gen_bool(0.5)).collect();
        leading.iter().copied().chain(others).collect()
    } else {
        let most = leading.len();
        let take = rng.gen_range((most / 2 + 1).min(most)..=most);
        rand::seq::index::sample(rng, most, take)
            .into_iter()
            .map(|i| leading[i])
            .collect()
    };
    targets.sort_unstable();
    targets
}

/// Every running node's clock offset (ms, node clock minus this process's
/// wall clock), from its most precise of a few `TIME` samples; a node
/// without a precise sample is left out (it cannot be shown to lead).
pub(super) fn offsets(cluster: &Cluster, nodes: &[usize]) -> Vec<(usize, f64)> {
    nodes
        .iter()
        .filter(|&&n| cluster.is_external() || cluster.is_running(n))
        .filter_map(|&n| offset(cluster, n).map(|o| (n, o)))
        .collect()
}

/// Node `n`'s offset: node time minus the midpoint of the round trip.
fn offset(cluster: &Cluster, n: usize) -> Option<f64> {
    let mut conn = cluster.conn(n).ok()?;
    let mut best: Option<(Duration, f64)> = None;
    // A few tries at most: the nemesis samples every round.
    for _ in 0..3 {
        let before = wall_ms();
        let sent = Instant::now();
        let reply = conn.command(&["TIME"]).ok()?;
        let trip = sent.elapsed();
        let after = wall_ms();
        let node = node_ms(&reply)?;
        if best.is_none_or(|(t, _)| trip < t) {
            best = Some((trip, node - (before + after) / 2.0));
        }
        if trip <= PRECISE {
            break;
        }
    }
    best.filter(|(trip, _)| *trip <= PRECISE).map(|(_, o)| o)
}

fn wall_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// `TIME`'s answer (seconds, microseconds) in ms.
fn node_ms(reply: &crate::nodes::Reply) -> Option<f64> {
    let crate::nodes::Reply::Array(Some(parts)) = reply else {
        return None;
    };
    let part = |i: usize| parts.get(i)?.as_text()?.parse::<f64>().ok();
    Some(part(0)? * 1e3 + part(1)? / 1e3)
}

#[cfg(test)]
#[path = "clock_leads_tests.rs"]
mod tests;
