//! Waiting until a local Redis Cluster has settled: every node it asks says
//! `cluster_state:ok`, agrees which primary owns each of the 16384 slots
//! (as the harness expects), and each replica is linked to its primary.
//! Every wait is bounded and its error names the node and what it saw.
//! Also the one-command-by-port helper the cluster files share.

use std::time::{Duration, Instant};

use super::shard_ports::ShardPorts;
use super::slots::owner_ports;
use crate::error::HarnessError;
use crate::nodes::resp::{Reply, RespConn};

/// How long a cluster may take to settle after a step (gossip runs every
/// 100 ms; a replica's first sync takes about a second).
pub(super) const SETTLE_WITHIN: Duration = Duration::from_secs(20);
/// How often a wait looks again.
const POLL_EVERY: Duration = Duration::from_millis(50);
/// How long one check waits for a node (a paused one never answers).
const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// Runs one command on the node at `127.0.0.1:port` on a fresh connection
/// with an I/O timeout of `timeout`; an error reply or I/O error becomes its text.
pub(super) fn node_command(port: u16, args: &[&str], timeout: Duration) -> Result<Reply, String> {
    let mut conn = RespConn::connect_addr(&format!("127.0.0.1:{port}"), timeout)
        .map_err(|e| format!("port {port}: connect: {e}"))?;
    match conn.command(args) {
        Ok(Reply::Error(message)) => Err(format!("port {port}: {message}")),
        Ok(reply) => Ok(reply),
        Err(e) => Err(format!("port {port}: {e}")),
    }
}

/// Makes a node's error text a [`HarnessError::ClusterStep`] of `step` on
/// shard `shard` of master `master`.
pub(super) fn step_failed(
    master: usize,
    shard: usize,
    step: &str,
) -> impl FnOnce(String) -> HarnessError {
    let step = step.to_owned();
    move |message| HarnessError::ClusterStep {
        master,
        shard,
        step,
        message,
    }
}

/// A node's `CLUSTER INFO` or `INFO` text.
pub(super) fn info(port: u16, args: &[&str]) -> Result<String, String> {
    Ok(node_command(port, args, CHECK_TIMEOUT)?
        .as_text()
        .unwrap_or_default())
}

/// A `field:value` line's value in an `INFO` text (`(absent)` when missing).
pub(super) fn field<'a>(info: &'a str, field: &str) -> &'a str {
    info.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .map_or("(absent)", str::trim)
}

/// What a master's cluster looks like once settled.
#[derive(Debug)]
pub(super) struct Expected<'a> {
    /// The master (voter) the cluster stands for, for errors.
    pub(super) master: usize,
    /// Each shard's current primary and replica.
    pub(super) shards: &'a [ShardPorts],
    /// Slot → shard.
    pub(super) owners: &'a [u16],
    /// The nodes to ask: those running (a killed node cannot agree, nor can
    /// its replica be linked to it).
    pub(super) live: &'a [u16],
}

impl Expected<'_> {
    /// Polls until settled, at most [`SETTLE_WITHIN`].
    pub(super) fn wait(&self) -> Result<(), HarnessError> {
        poll(
            self.master,
            "every node cluster_state:ok, agreeing on the owner of every slot, replicas linked",
            || self.unsettled(),
        )
    }

    /// What is not settled yet, naming the node; `None` once all is.
    fn unsettled(&self) -> Option<String> {
        self.live.iter().find_map(|&port| self.node_unsettled(port))
    }

    fn node_unsettled(&self, port: u16) -> Option<String> {
        let (shard, role) = self.role_of(port);
        let name = format!("port {port} (shard {shard} {role})");
        match info(port, &["CLUSTER", "INFO"]) {
            Ok(text) if field(&text, "cluster_state") == "ok" => {}
            Ok(text) => {
                let state = field(&text, "cluster_state");
                return Some(format!("{name}: cluster_state:{state}"));
            }
            Err(e) => return Some(format!("{name}: {e}")),
        }
        let seen = match node_command(port, &["CLUSTER", "SLOTS"], CHECK_TIMEOUT)
            .and_then(|reply| owner_ports(&reply))
        {
            Ok(seen) => seen,
            Err(e) => return Some(format!("{name}: {e}")),
        };
        for (slot, (&owner, &seen)) in self.owners.iter().zip(&seen).enumerate() {
            let wanted = self.shards[usize::from(owner)].primary;
            if seen != wanted {
                let seen = if seen == 0 {
                    "no owner".to_owned()
                } else {
                    format!("port {seen}")
                };
                return Some(format!(
                    "{name} sees slot {slot} owned by {seen}, not by port {wanted} (shard {owner} primary)"
                ));
            }
        }
        let primary = self.shards[shard].primary;
        let replication = match info(port, &["INFO", "replication"]) {
            Ok(text) => text,
            Err(e) => return Some(format!("{name}: {e}")),
        };
        let wanted_role = if role == "primary" { "master" } else { "slave" };
        let seen_role = field(&replication, "role");
        if seen_role != wanted_role {
            return Some(format!("{name}: role:{seen_role}"));
        }
        // A replica can say its link is up before its primary lists it
        // online (and streams writes to it): wait for both sides.
        if let Some(replica) = self.shards[shard].replica {
            let streaming = format!("port={replica},state=online");
            if role == "primary"
                && self.live.contains(&replica)
                && !replication.contains(&streaming)
            {
                return Some(format!(
                    "{name}: its replica on port {replica} is not online yet"
                ));
            }
        }
        // A replica of a primary that is down cannot be linked.
        if role == "replica" && self.live.contains(&primary) {
            let (port_seen, link) = (
                field(&replication, "master_port"),
                field(&replication, "master_link_status"),
            );
            if port_seen != primary.to_string() || link != "up" {
                return Some(format!(
                    "{name}: master_port:{port_seen} master_link_status:{link} (its primary: port {primary})"
                ));
            }
        }
        None
    }

    /// Which shard a port belongs to, and whether it is its primary.
    fn role_of(&self, port: u16) -> (usize, &'static str) {
        self.shards
            .iter()
            .enumerate()
            .find_map(|(shard, ports)| {
                if ports.primary == port {
                    Some((shard, "primary"))
                } else if ports.replica == Some(port) {
                    Some((shard, "replica"))
                } else {
                    None
                }
            })
            .unwrap_or((0, "unknown"))
    }
}

/// Polls `unsettled` until it returns `None`, at most [`SETTLE_WITHIN`]; the
/// error names what was waited for and the last thing seen.
pub(super) fn poll(
    master: usize,
    waited_for: &str,
    mut unsettled: impl FnMut() -> Option<String>,
) -> Result<(), HarnessError> {
    let deadline = Instant::now() + SETTLE_WITHIN;
    loop {
        let Some(seen) = unsettled() else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            return Err(HarnessError::ClusterNotSettled {
                master,
                waited_for: waited_for.to_owned(),
                within: SETTLE_WITHIN,
                seen,
            });
        }
        std::thread::sleep(POLL_EVERY);
    }
}
