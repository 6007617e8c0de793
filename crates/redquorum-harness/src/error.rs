//! Harness errors: what failed, on which node.

use std::io;

/// Why the harness could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// `redis-server` is not on `PATH` (nor in `REDQUORUM_REDIS_SERVER`).
    #[error(
        "redis-server not found: install it (Debian/Ubuntu: `apt-get install -y redis-server`) \
         or set REDQUORUM_REDIS_SERVER to its path"
    )]
    RedisNotInstalled,
    /// Starting, signalling or waiting for a process failed.
    #[error("node {node}: {action}: {source}")]
    Io {
        /// The node's index.
        node: usize,
        /// What was being done.
        action: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The node did not answer PING in time after starting.
    #[error("node {node} (port {port}) did not become ready; the end of its log: {log_tail}")]
    NotReady {
        /// The node's index.
        node: usize,
        /// Its port.
        port: u16,
        /// The last lines of its log, read when it failed (the log itself
        /// goes with the node's temporary directory).
        log_tail: String,
    },
    /// A node index beyond the cluster.
    #[error("no node {0} in this cluster")]
    NoSuchNode(usize),
    /// Process control on nodes this harness did not start.
    #[error("node {0} is external (REDQUORUM_NODES): the harness cannot control its process")]
    External(usize),
    /// `REDQUORUM_NODES` holds something that is not a list of URLs.
    #[error("REDQUORUM_NODES entry {0:?} is not a redis:// URL with host:port")]
    BadNodeUrl(String),
    /// The server answered a command with an error.
    #[error("node {node}: command {command} failed: {message}")]
    Command {
        /// The node's index.
        node: usize,
        /// The command name.
        command: String,
        /// The server's error text.
        message: String,
    },
    /// A fast-clock node needs libfaketime and a libc-malloc `redis-server`.
    #[error(
        "fast clock unavailable: {0}; run tests/ensure-faketime.sh (installs faketime and a \
         libc-malloc redis-server), or set REDQUORUM_LIBFAKETIME and REDQUORUM_FAKETIME_REDIS"
    )]
    FaketimeUnavailable(String),
    /// A sharded master (a local Redis Cluster) was asked for something its
    /// layout cannot do: no shards, a second replica, a failover without a
    /// replica, a shard or slot out of range.
    #[error("redis cluster: {0}")]
    ClusterLayout(String),
    /// A step of setting up, resharding or failing over a local Redis
    /// Cluster failed on one of its nodes.
    #[error("redis cluster of master {master}, shard {shard}: {step}: {message}")]
    ClusterStep {
        /// The master (voter) the cluster stands for.
        master: usize,
        /// The shard whose node failed the step.
        shard: usize,
        /// What was being done (`CLUSTER ADDSLOTS`, `MIGRATE`, ...).
        step: String,
        /// What the node answered, or the I/O error.
        message: String,
    },
    /// A local Redis Cluster did not reach the state a step waits for (every
    /// node `cluster_state:ok`, agreeing who owns every slot, replicas
    /// linked) within the bound.
    #[error(
        "redis cluster of master {master}: {waited_for} not reached within {within:?}; last seen: {seen}"
    )]
    ClusterNotSettled {
        /// The master (voter) the cluster stands for.
        master: usize,
        /// What was waited for.
        waited_for: String,
        /// How long it was waited for.
        within: std::time::Duration,
        /// The last thing seen that was not it, naming the node (port, shard, role).
        seen: String,
    },
    /// A workspace example could not be built or located for a test.
    #[error("example {example} of {package}: {reason}")]
    Example {
        /// The package that owns the example.
        package: String,
        /// The example's name.
        example: String,
        /// What went wrong (cargo's output, the OS error).
        reason: String,
    },
}

/// The last lines of a node's log, for an error that outlives the log file.
pub(crate) fn log_tail(log: &std::path::Path) -> String {
    const LINES: usize = 5;
    match std::fs::read_to_string(log) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let tail = lines[lines.len().saturating_sub(LINES)..].join(" | ");
            if tail.is_empty() {
                "(empty)".to_owned()
            } else {
                tail
            }
        }
        Err(e) => format!("(no log at {}: {e})", log.display()),
    }
}
