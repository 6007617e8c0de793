//! `NemesisConfig`: which faults the nemesis chooses from, where, how long
//! and how hard, and the budgets that keep it within Redlock's
//! assumptions (a minority at a time, clock shifts within the drift
//! budget, a killed node down for long enough).

use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use crate::faults::client_group::ClientPauser;
use crate::faults::kind::FaultKind;

/// What the nemesis does and how hard.
///
/// # Examples
///
/// ```
/// use redquorum_harness::{FaultKind, NemesisConfig};
/// let config = NemesisConfig { kinds: vec![FaultKind::Stall], ..NemesisConfig::default() };
/// assert_eq!(config.kinds.len(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct NemesisConfig {
    /// The kinds to choose from, uniformly. Default: every kind for single
    /// servers (all but [`FaultKind::CLUSTER`]).
    pub kinds: Vec<FaultKind>,
    /// Nodes that may be faulted. Default: empty = every node.
    pub nodes: Vec<usize>,
    /// Each fault hits a random set of 1 to this many nodes at once. Keep it
    /// a minority (≤ N/2) to stay within the assumptions. Default: 1. On
    /// cluster masters it bounds the lagging failover only (up to N/2 + 1
    /// is within the assumptions there); migrations and clean failovers hit
    /// 1 to N masters (the lock refuses a new primary's votes for the
    /// longest lease).
    pub max_nodes: usize,
    /// Each fault hits at least this many nodes. Default: 1.
    pub min_nodes: usize,
    /// How long a fault lasts, at most (uniform from 50 ms). Default: 1 s.
    pub max_fault: Duration,
    /// Quiet time between faults, at most (uniform from `min_gap`). Default: 300 ms.
    pub max_gap: Duration,
    /// Quiet time between faults, at least. Default: 0.
    pub min_gap: Duration,
    /// A paused client group stays frozen this long, at most (uniform from a
    /// tenth of it). Default: 1 s.
    pub max_client_pause: Duration,
    /// The client groups a client fault can hit (pauses need the groups to
    /// run on their own runtimes, see `run_workload_groups`). Default: none.
    pub clients: Option<ClientPauser>,
    /// Largest forward step of a strobing clock: keep it within the drift
    /// budget. Default: 20 ms.
    pub max_strobe: Duration,
    /// The history's epoch, for the fault log's times. Default: the nemesis's start.
    pub epoch: Option<Instant>,
    /// A killed node stays down this long, at most. Default: 500 ms. Without
    /// persistence, use at least the max TTL (and set `min_restart_delay`).
    pub max_restart_delay: Duration,
    /// A killed node stays down at least this long. Default: 0.
    pub min_restart_delay: Duration,
    /// Largest clock shift of one node within any `clock_window` (jumps and
    /// strobe steps added up): keep it within the lock's drift budget. Default: 20 ms.
    pub max_clock_jump: Duration,
    /// The window the clock budget is counted over: the lock TTL (a key
    /// must not live through more than the budget). Default: 2 s.
    pub clock_window: Duration,
    /// Added latency, at most (uniform from 10 ms). Default: 300 ms.
    pub max_latency: Duration,
    /// The nodes the clock and strobe faults may shift (empty: every
    /// node): nodes whose clock already runs fast use their drift budget
    /// up. Default: empty.
    pub clock_nodes: Vec<usize>,
    /// Lock keys the clock jump shifts. Default: `lock:*`.
    pub key_pattern: String,
    /// The lock keys the workload uses, for the faults of cluster masters:
    /// a migration moves the slot of one of them, a failover promotes the
    /// replica of the shard serving it. Default: none (a random slot).
    pub lock_keys: Vec<String>,
    /// The latency of a slow majority, at most (uniform from a fifth of
    /// it): keep it below the lock's node timeout. Default: 80 ms.
    pub majority_latency: Duration,
    /// A majority restart comes at most this often (the restarted nodes
    /// refuse their votes for the max TTL). Default: 10 s.
    pub majority_restart_every: Duration,
    /// Random seed. Default: 7.
    pub seed: u64,
}

impl NemesisConfig {
    /// The nodes (or masters) faults may strike among `count`: those named,
    /// else all.
    pub(super) fn targets_among(&self, count: usize) -> Vec<usize> {
        if self.nodes.is_empty() {
            (0..count).collect()
        } else {
            self.nodes.clone()
        }
    }

    /// The range the pause between two faults is drawn from.
    pub(super) fn gaps(&self) -> RangeInclusive<Duration> {
        self.min_gap..=self.max_gap.max(self.min_gap)
    }
}

impl Default for NemesisConfig {
    fn default() -> Self {
        Self {
            kinds: FaultKind::ALL
                .into_iter()
                .filter(|k| !k.needs_cluster())
                .collect(),
            nodes: Vec::new(),
            max_nodes: 1,
            min_nodes: 1,
            max_fault: Duration::from_secs(1),
            max_gap: Duration::from_millis(300),
            min_gap: Duration::ZERO,
            max_client_pause: Duration::from_secs(1),
            clients: None,
            max_strobe: Duration::from_millis(20),
            epoch: None,
            max_restart_delay: Duration::from_millis(500),
            min_restart_delay: Duration::ZERO,
            max_clock_jump: Duration::from_millis(20),
            clock_window: Duration::from_secs(2),
            max_latency: Duration::from_millis(300),
            clock_nodes: Vec::new(),
            key_pattern: "lock:*".into(),
            lock_keys: Vec::new(),
            majority_latency: Duration::from_millis(80),
            majority_restart_every: Duration::from_secs(10),
            seed: 7,
        }
    }
}
