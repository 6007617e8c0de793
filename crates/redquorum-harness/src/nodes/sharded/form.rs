//! Forming a Redis Cluster out of running cluster-mode nodes, by port: the
//! server arguments such a node is started with ([`redis_cluster_args`]),
//! the slots split evenly among the primaries, `CLUSTER MEET`, replicas
//! attached with `CLUSTER REPLICATE`, and a bounded wait until it has
//! settled ([`form_redis_cluster`]); and the `redis-cluster://` URL a
//! client is given ([`redis_cluster_url`]). [`ShardedCluster`](crate::ShardedCluster)
//! forms its clusters with it; so does `redquorum nodes up --cluster`.

use std::time::Duration;

use super::settle::{Expected, node_command, poll, step_failed};
use super::shard_ports::ShardPorts;
use super::slots::{SLOT_COUNT, even_owners, even_range};
use crate::error::HarnessError;

/// How long one setup command may take (`CLUSTER ADDSLOTS` with every slot
/// of a shard on an old server is the longest).
const STEP_TIMEOUT: Duration = Duration::from_secs(5);

/// The `redis-server` arguments of a node of a local Redis Cluster, to add
/// to the usual ones (its `--dir` holds its `nodes.conf`):
///
/// - `cluster-node-timeout 2000`: a node not answering for 2 s is suspected,
///   so a failover settles in a few seconds;
/// - `cluster-replica-no-failover yes`: a replica never promotes itself;
///   only the harness's `CLUSTER FAILOVER TAKEOVER` does, so no test sees
///   a failover it did not ask for;
/// - `cluster-require-full-coverage no`: a shard that is down (killed,
///   paused) costs only its own slots; the other shards keep answering for
///   theirs, so a fault on one shard stays a fault on that shard's keys
///   rather than turning the whole master (voter) off;
/// - `repl-diskless-sync-delay 0`: a replica's full sync starts at once, not
///   after Redis's default 5 s wait for more replicas.
///
/// # Examples
///
/// ```
/// assert!(redquorum_harness::redis_cluster_args().contains(&"--cluster-enabled"));
/// ```
#[must_use]
pub fn redis_cluster_args() -> &'static [&'static str] {
    &[
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--cluster-node-timeout",
        "2000",
        "--cluster-replica-no-failover",
        "yes",
        "--cluster-require-full-coverage",
        "no",
        "--repl-diskless-sync-delay",
        "0",
    ]
}

/// The URL of a Redis Cluster on `127.0.0.1` for the library (fred's form):
/// `redis-cluster://127.0.0.1:P0?node=127.0.0.1:P1&node=...`, one seed per port.
///
/// # Examples
///
/// ```
/// use redquorum_harness::redis_cluster_url;
/// assert_eq!(redis_cluster_url(&[7301]), "redis-cluster://127.0.0.1:7301");
/// assert_eq!(
///     redis_cluster_url(&[7301, 7302, 7303]),
///     "redis-cluster://127.0.0.1:7301?node=127.0.0.1:7302&node=127.0.0.1:7303"
/// );
/// ```
#[must_use]
pub fn redis_cluster_url(ports: &[u16]) -> String {
    let mut url = String::from("redis-cluster://");
    for (i, port) in ports.iter().enumerate() {
        url.push_str(match i {
            0 => "",
            1 => "?node=",
            _ => "&node=",
        });
        url.push_str(&format!("127.0.0.1:{port}"));
    }
    url
}

/// Makes one Redis Cluster of fresh, running cluster-mode nodes (started
/// with [`redis_cluster_args`], no slots, no keys): shard `i`'s primary gets
/// the `i`-th of the slots split evenly (`CLUSTER ADDSLOTSRANGE`, or
/// `CLUSTER ADDSLOTS` on servers before 7), every node meets the others,
/// and each replica follows its primary. Returns once every node says
/// `cluster_state:ok`, every node's `CLUSTER SLOTS` gives each shard its
/// range, and every replica's link to its primary is up.
///
/// `master` only names the cluster in errors.
///
/// # Errors
///
/// [`HarnessError::ClusterLayout`] for no shards, [`HarnessError::ClusterStep`]
/// for a command a node refused, [`HarnessError::ClusterNotSettled`] when
/// the cluster did not settle within 20 s.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use redquorum_harness::{Cluster, ShardPorts, form_redis_cluster, redis_cluster_args};
/// let nodes = Cluster::builder(2).server_args(redis_cluster_args()).start()?;
/// let shards: Vec<ShardPorts> = (0..2)
///     .map(|i| ShardPorts { primary: nodes.port(i), replica: None })
///     .collect();
/// form_redis_cluster(0, &shards)?;
/// let info = nodes.command(1, &["CLUSTER", "INFO"])?.as_text().unwrap();
/// assert!(info.contains("cluster_state:ok"));
/// # Ok(()) }
/// ```
pub fn form_redis_cluster(master: usize, shards: &[ShardPorts]) -> Result<(), HarnessError> {
    if shards.is_empty() || shards.len() > usize::from(SLOT_COUNT) {
        return Err(HarnessError::ClusterLayout(format!(
            "{} shards: a cluster has 1 to {SLOT_COUNT}",
            shards.len()
        )));
    }
    let failed = |shard, step| step_failed(master, shard, step);
    for (shard, ports) in shards.iter().enumerate() {
        // A distinct epoch per primary, as redis-cli sets them: no epoch
        // collisions for the nodes to resolve after they meet. Refused when
        // the node already knows another (a stopped cluster's node still
        // calling at a reused port): the nodes then resolve the collision
        // themselves, so it is not an error.
        let epoch = (shard + 1).to_string();
        let _ = node_command(
            ports.primary,
            &["CLUSTER", "SET-CONFIG-EPOCH", &epoch],
            STEP_TIMEOUT,
        );
        add_slots(ports.primary, even_range(shard, shards.len()))
            .map_err(failed(shard, "CLUSTER ADDSLOTSRANGE"))?;
    }
    let all: Vec<(usize, u16)> = shards
        .iter()
        .enumerate()
        .flat_map(|(shard, ports)| ports.ports().into_iter().map(move |p| (shard, p)))
        .collect();
    let first = shards[0].primary;
    for &(shard, port) in &all[1..] {
        node_command(
            first,
            &["CLUSTER", "MEET", "127.0.0.1", &port.to_string()],
            STEP_TIMEOUT,
        )
        .map_err(failed(shard, "CLUSTER MEET"))?;
    }
    poll(master, "every node knowing every other", || {
        all.iter()
            .find_map(|&(_, port)| unknown_nodes(port, all.len()))
    })?;
    for (shard, ports) in shards.iter().enumerate() {
        let Some(replica) = ports.replica else {
            continue;
        };
        let id = node_id(ports.primary).map_err(failed(shard, "CLUSTER MYID"))?;
        node_command(replica, &["CLUSTER", "REPLICATE", &id], STEP_TIMEOUT)
            .map_err(failed(shard, "CLUSTER REPLICATE"))?;
    }
    let owners = even_owners(shards.len());
    let live: Vec<u16> = all.iter().map(|&(_, port)| port).collect();
    Expected {
        master,
        shards,
        owners: &owners,
        live: &live,
    }
    .wait()
}

/// A node's cluster id (`CLUSTER MYID`).
pub(super) fn node_id(port: u16) -> Result<String, String> {
    node_command(port, &["CLUSTER", "MYID"], STEP_TIMEOUT)?
        .as_text()
        .ok_or_else(|| format!("port {port}: CLUSTER MYID gave no id"))
}

/// Gives a primary the slots `start..=end`: one range command on Redis 7,
/// else every slot listed (older servers have no `ADDSLOTSRANGE`).
fn add_slots(port: u16, (start, end): (u16, u16)) -> Result<(), String> {
    let range = [
        "CLUSTER",
        "ADDSLOTSRANGE",
        &start.to_string(),
        &end.to_string(),
    ];
    match node_command(port, &range, STEP_TIMEOUT) {
        Ok(_) => Ok(()),
        Err(e) if e.to_lowercase().contains("subcommand") => {
            let slots: Vec<String> = (start..=end).map(|s| s.to_string()).collect();
            let mut args = vec!["CLUSTER", "ADDSLOTS"];
            args.extend(slots.iter().map(String::as_str));
            node_command(port, &args, STEP_TIMEOUT).map(|_| ())
        }
        Err(e) => Err(e),
    }
}

/// What the node on `port` lacks to know all `total` nodes by id (a node
/// met but still in handshake has a made-up id); `None` once it knows them.
fn unknown_nodes(port: u16, total: usize) -> Option<String> {
    let nodes = match node_command(port, &["CLUSTER", "NODES"], STEP_TIMEOUT) {
        Ok(reply) => reply.as_text().unwrap_or_default(),
        Err(e) => return Some(e),
    };
    let known = nodes
        .lines()
        .filter(|line| {
            let flags = line.split(' ').nth(2).unwrap_or("");
            !flags.contains("handshake") && !flags.contains("noaddr")
        })
        .count();
    (known != total).then(|| format!("port {port} knows {known} of {total} nodes"))
}
