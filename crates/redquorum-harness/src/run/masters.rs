//! The masters a torture run locks on: single servers behind per-group
//! fault proxies, or cluster masters (each a local Redis Cluster of S
//! shards, each shard's primary with one replica), reached directly: a
//! `redis-cluster://` client learns its shards' addresses from the cluster
//! itself, so no proxy can stand in front of them. What the run does that
//! differs between the two (the lock's URLs, the key audit, the nemesis,
//! the healing, the leak check) is here.

use std::sync::Arc;
use std::time::Duration;

use super::plan::TorturePlan;
use crate::error::HarnessError;
use crate::evidence::{
    AuditConfig, KeyAudit, LeakedKey, LockKeys, RuntimeLag, lock_keys_after,
    sharded_lock_keys_after,
};
use crate::faults::{Nemesis, NemesisConfig, Proxies};
use crate::nodes::{Cluster, ShardedCluster};

/// The run's masters.
#[derive(Debug, Clone)]
pub(super) enum Masters {
    /// Single servers, each client group behind proxies of its own.
    Servers {
        cluster: Arc<Cluster>,
        proxies: Arc<Proxies>,
    },
    /// Cluster masters; every client group reaches them directly.
    Sharded {
        sharded: Arc<ShardedCluster>,
        groups: usize,
    },
}

impl Masters {
    /// The plan's masters, started (or the given ones), with the proxies of
    /// single servers; `notes` gets what was skipped for want of libfaketime.
    pub(super) fn start<L>(plan: &TorturePlan<L>, notes: &mut Vec<String>) -> Result<Self, String> {
        if let Some(shards) = plan.cluster_shards {
            let sharded = ShardedCluster::start(plan.node_count, shards, 1)
                .map_err(|e| format!("cluster masters: {e}"))?;
            return Ok(Self::Sharded {
                sharded: Arc::new(sharded),
                groups: plan.groups.max(1),
            });
        }
        let cluster = Arc::new(plan.cluster(notes)?);
        let proxies = Proxies::start_groups(&cluster, plan.groups)
            .map_err(|e| format!("fault proxies: {e}"))?;
        Ok(Self::Servers {
            cluster,
            proxies: Arc::new(proxies),
        })
    }

    /// How many masters (voters).
    pub(super) fn len(&self) -> usize {
        match self {
            Self::Servers { cluster, .. } => cluster.len(),
            Self::Sharded { sharded, .. } => sharded.len(),
        }
    }

    /// How many client groups.
    pub(super) fn groups(&self) -> usize {
        match self {
            Self::Servers { proxies, .. } => proxies.groups(),
            Self::Sharded { groups, .. } => *groups,
        }
    }

    /// The URLs client group `group` locks on.
    pub(super) fn urls_for(&self, group: usize) -> Vec<String> {
        match self {
            Self::Servers { proxies, .. } => proxies.urls_for(group),
            Self::Sharded { sharded, .. } => sharded.urls(),
        }
    }

    /// The key audit, reading every master.
    pub(super) fn audit(&self, config: AuditConfig) -> KeyAudit {
        match self {
            Self::Servers { cluster, .. } => KeyAudit::start(cluster.clone(), config),
            Self::Sharded { sharded, .. } => KeyAudit::start_sharded(sharded.clone(), config),
        }
    }

    /// The nemesis, striking these masters.
    pub(super) fn nemesis(&self, config: NemesisConfig) -> Nemesis {
        match self {
            Self::Servers { cluster, proxies } => {
                Nemesis::start(cluster.clone(), proxies.clone(), config)
            }
            Self::Sharded { sharded, .. } => Nemesis::start_sharded(sharded.clone(), config),
        }
    }

    /// The fault proxies' late wake-ups, dated from `epoch` (cluster
    /// masters have no proxies).
    pub(super) fn proxy_lags(&self, epoch: std::time::Instant) -> Vec<RuntimeLag> {
        match self {
            Self::Servers { cluster, proxies } => {
                let mut lags = Vec::new();
                for group in 0..proxies.groups() {
                    for node in 0..cluster.len() {
                        let proxy = proxies.group(group, node);
                        lags.extend(proxy.lags().into_iter().map(|(woke, late)| RuntimeLag {
                            group,
                            node: Some(node),
                            at: woke.saturating_duration_since(epoch),
                            late,
                        }));
                    }
                }
                lags
            }
            Self::Sharded { .. } => Vec::new(),
        }
    }

    /// Heals every proxy (cluster masters have none).
    pub(super) fn heal(&self) {
        if let Self::Servers { proxies, .. } = self {
            proxies.heal_all();
        }
    }

    /// Starts again every local process a fault left down (a failed
    /// restart), so the leak check can read it; what it did, as notes.
    /// Blocks the thread.
    pub(super) fn restart_down(&self) -> Vec<String> {
        match self {
            Self::Servers { cluster, .. } => (0..cluster.len())
                .filter(|&n| !cluster.is_external() && !cluster.is_running(n))
                .map(|n| match cluster.restart(n) {
                    Ok(()) => format!("node {n} was down after the nemesis: restarted"),
                    Err(e) => {
                        format!("node {n} was down after the nemesis and did not restart: {e}")
                    }
                })
                .collect(),
            Self::Sharded { sharded, .. } => (0..sharded.len())
                .flat_map(|m| {
                    let cluster = sharded.master(m);
                    let down: Vec<usize> =
                        (0..cluster.len()).filter(|&i| !cluster.is_running(i)).collect();
                    let restarted = down
                        .iter()
                        .try_for_each(|&i| cluster.restart(i))
                        .and_then(|()| sharded.wait_settled(m));
                    down.into_iter().map(move |i| match &restarted {
                        Ok(()) => format!(
                            "master {m}: process {i} was down after the nemesis: restarted"
                        ),
                        Err(e) => format!(
                            "master {m}: process {i} was down after the nemesis and did not come back: {e}"
                        ),
                    })
                })
                .collect(),
        }
    }

    /// The lock keys still on a master after `within` (see
    /// [`lock_keys_after`]). Blocks the thread.
    pub(super) fn lock_keys_after(
        &self,
        keys: &LockKeys,
        within: Duration,
    ) -> Result<Vec<LeakedKey>, HarnessError> {
        match self {
            Self::Servers { cluster, .. } => lock_keys_after(cluster, keys, within),
            Self::Sharded { sharded, .. } => sharded_lock_keys_after(sharded, keys, within),
        }
    }

    /// What the banner says of them.
    pub(super) fn describe(&self) -> String {
        match self {
            Self::Servers { cluster, .. } if cluster.is_external() => {
                format!("{} nodes (given)", cluster.len())
            }
            Self::Servers { cluster, .. } => format!("{} nodes (local)", cluster.len()),
            Self::Sharded { sharded, .. } => format!(
                "{} cluster masters of {} shards, 1 replica each (local)",
                sharded.len(),
                sharded.shards()
            ),
        }
    }
}
