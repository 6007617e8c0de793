//! The nemesis's loop: after a random quiet gap, one fault kind at random,
//! on a random set of nodes (1 to `max_nodes`, a majority for the majority
//! faults), struck and healed (`strike.rs`), then logged with its start
//! and end on the history's clock. Kinds that cannot strike here (process
//! faults on external nodes, a strobe without a controlled clock, client
//! pauses without client groups, the faults of cluster masters) are
//! logged as skipped once, up front.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::clock_leads::{self, ClockLeads};
use super::nemesis_config::NemesisConfig;
use super::strike::{Hit, SHORT, Striker, nap};
use crate::faults::fault_log::{FaultEvent, FaultLog};
use crate::faults::kind::FaultKind;
use crate::faults::net::Proxies;
use crate::nodes::Cluster;

/// Strikes until `stop`, then heals every proxy and returns what was done.
pub(super) fn run(
    cluster: &Cluster,
    proxies: &Proxies,
    config: &NemesisConfig,
    stop: &AtomicBool,
) -> FaultLog {
    let rng = StdRng::seed_from_u64(config.seed);
    let epoch = config.epoch.unwrap_or_else(Instant::now);
    let mut log = FaultLog::default();
    let clock_ok = |n: &usize| config.clock_nodes.is_empty() || config.clock_nodes.contains(n);
    let strobing: Vec<usize> = (0..cluster.len())
        .filter(|&n| cluster.has_controlled_clock(n) && clock_ok(&n))
        .collect();
    let kinds: Vec<FaultKind> = config
        .kinds
        .iter()
        .copied()
        .filter(|k| !k.needs_cluster())
        .filter(|k| !(cluster.is_external() && k.needs_process()))
        .filter(|k| *k != FaultKind::Strobe || !strobing.is_empty())
        .filter(|k| *k != FaultKind::ClientPause || config.clients.is_some())
        .collect();
    for kind in config.kinds.iter().filter(|k| !kinds.contains(k)) {
        log.errors.push(format!(
            "{} skipped: {}",
            kind.name(),
            match kind {
                FaultKind::Strobe => "no node has a controlled clock (libfaketime)",
                FaultKind::ClientPause => "clients do not run in pausable groups",
                k if k.needs_cluster() => "single servers, not cluster masters",
                _ => "external nodes (no process control)",
            }
        ));
    }
    let nodes = config.targets_among(cluster.len());
    if kinds.is_empty() || nodes.is_empty() {
        return log;
    }
    let clocks: Vec<usize> = nodes.iter().copied().filter(clock_ok).collect();
    let mut striker = Striker::new(cluster, proxies, config, stop, rng, nodes.clone());
    // Fence-loss strikes only nodes whose clocks lead (`clock_leads.rs`):
    // the clocks are sampled every round, so a lead a restart takes away
    // is remembered.
    let fence_loss = kinds.contains(&FaultKind::FenceLoss);
    let (mut leads, mut held_back) = (ClockLeads::default(), 0_u64);
    while nap(striker.rng.gen_range(config.gaps()), stop) {
        let kind = kinds[striker.rng.gen_range(0..kinds.len())];
        if kind == FaultKind::RestartMajority && striker.restarted_a_majority_lately() {
            continue;
        }
        let leading = if fence_loss {
            let offsets = clock_leads::offsets(cluster, &nodes);
            leads.leading(&offsets, Instant::now())
        } else {
            Vec::new()
        };
        if kind == FaultKind::FenceLoss && leading.is_empty() {
            held_back += 1;
            continue;
        }
        let pool = match kind {
            FaultKind::Strobe => &strobing,
            FaultKind::Clock if !clocks.is_empty() => &clocks,
            _ => &nodes,
        };
        let targets = if kind == FaultKind::FenceLoss {
            clock_leads::fence_loss_targets(&mut striker.rng, &leading, &nodes, cluster.len())
        } else {
            targets(&mut striker.rng, kind, pool, config)
        };
        let length = striker.rng.gen_range(SHORT..=config.max_fault.max(SHORT));
        let started = epoch.elapsed();
        let mut hit = Hit {
            targets,
            group: None,
            skipped: false,
            held_answers: None,
            slowed: Vec::new(),
        };
        match striker.strike(kind, &mut hit, length) {
            Ok(()) if hit.skipped => {}
            Ok(()) => {
                let mut event = FaultEvent::new(kind, hit.targets, started, epoch.elapsed());
                event.group = hit.group;
                event.held_answers = hit.held_answers;
                log.record(event);
                if !hit.slowed.is_empty() {
                    let slowed = FaultKind::SlowMajority;
                    log.record(FaultEvent::new(
                        slowed,
                        hit.slowed,
                        started,
                        epoch.elapsed(),
                    ));
                }
            }
            Err(e) => log
                .errors
                .push(format!("{} on nodes {:?}: {e}", kind.name(), hit.targets)),
        }
        if kind == FaultKind::Strobe {
            // Its forward steps were readings ahead of real time.
            leads.observe(config.max_strobe.as_secs_f64() * 1e3, Instant::now());
        }
    }
    proxies.heal_all();
    if kinds.contains(&FaultKind::ScriptFlush) {
        log.notes
            .push(format!("script-flush: {}", proxies.script_counts()));
    }
    if held_back > 0 {
        log.notes.push(format!(
            "fence-loss held back {held_back} times: no running node's clock was shown at or past every earlier reading (within {} ms)",
            clock_leads::TOLERANCE_MS
        ));
    }
    log
}

/// A random set of distinct nodes from `pool`, sorted: 1 to `max_nodes`
/// of them (a minority when `max_nodes` ≤ N/2; up to a bare majority for
/// a script flush), at least `min_nodes`; a bare majority for the majority
/// faults (fence-loss chooses its own,
/// `clock_leads.rs`).
fn targets(
    rng: &mut StdRng,
    kind: FaultKind,
    pool: &[usize],
    config: &NemesisConfig,
) -> Vec<usize> {
    let mut most = config.max_nodes.clamp(1, pool.len());
    // A script flush loses no key, so a majority of them is within the
    // assumptions; unless the count is fixed (`--fault-nodes`, or a single
    // node on three), it may strike a bare majority, whose NOSCRIPT answers
    // a quorum then needs: an answer the client gives the wrong operation
    // can grant a hold.
    if kind == FaultKind::ScriptFlush && config.min_nodes != config.max_nodes {
        most = most.max(pool.len() / 2 + 1);
    }
    let count = if matches!(kind, FaultKind::SlowMajority | FaultKind::RestartMajority) {
        pool.len() / 2 + 1
    } else {
        rng.gen_range(config.min_nodes.clamp(1, most)..=most)
    };
    let mut targets: Vec<usize> = rand::seq::index::sample(rng, pool.len(), count)
        .into_iter()
        .map(|i| pool[i])
        .collect();
    targets.sort_unstable();
    targets
}
