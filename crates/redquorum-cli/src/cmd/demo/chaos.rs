//! The demo's chaos: one lock master (a cluster master: its first shard's
//! primary) killed midway, restarted once the lock TTL has passed.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::nodes_arg::Nodes;

use super::TTL;
use super::sale::Sale;

/// What happened to the killed master, for the summary.
#[derive(Debug, Default)]
pub(super) struct ChaosLog {
    pub(super) killed: Option<(usize, usize)>,
    pub(super) restarted_after: Option<Duration>,
    pub(super) error: Option<String>,
}

/// Kills one master once 30% of the coupons are sold, restarts it after the TTL.
///
/// The restart waits for the TTL because the node comes back empty (no
/// persistence): any lock it had granted has expired by then, so forgetting
/// it cannot let two holders in (docs/safety.md).
pub(super) async fn chaos(sale: &Sale, nodes: &Nodes) -> ChaosLog {
    let mut log = ChaosLog::default();
    let victim = sale.redlock.nodes().count() - 1;
    let Some((cluster, process, _)) = nodes.process_of(victim) else {
        return log;
    };
    let trigger = (sale.coupons as usize * 3 / 10).max(1);
    while sale.sold.load(Ordering::Relaxed) < trigger {
        if sale.finished.load(Ordering::Relaxed) {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The harness waits for the process; do that off the async workers.
    if let Err(e) = tokio::task::block_in_place(|| cluster.kill(process)) {
        log.error = Some(format!("kill failed: {e}"));
        return log;
    }
    let killed_at = Instant::now();
    log.killed = Some((victim, sale.sold.load(Ordering::Relaxed)));
    tokio::time::sleep(TTL + Duration::from_millis(100)).await;
    match tokio::task::block_in_place(|| cluster.restart(process)) {
        Ok(()) => log.restarted_after = Some(killed_at.elapsed()),
        Err(e) => log.error = Some(format!("restart failed: {e}")),
    }
    log
}
