//! Why a node's vote does not count toward a quorum ([`Ineligible`]): the
//! reasons the health rules (health/eligibility.rs, node/nodes.rs) give.

use std::fmt;
use std::time::Duration;

use crate::node_id::NodeId;

/// Why a node's vote does not count toward a quorum.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum::Ineligible;
///
/// let reason = Ineligible::RecentRestart {
///     uptime: Duration::from_secs(3),
///     max_ttl: Duration::from_secs(30),
/// };
/// assert_eq!(reason.to_string(), "not durable and up for 3s, less than the max ttl 30s");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ineligible {
    /// The node is a replica, not an independent master.
    Replica,
    /// The node does not fsync every write and started less than the max TTL
    /// ago: it may have forgotten keys it granted before a crash.
    RecentRestart {
        /// How long the node has been up.
        uptime: Duration,
        /// The configured maximum lock TTL.
        max_ttl: Duration,
    },
    /// The node (re)connected and has not been probed since: it may just
    /// have restarted.
    Unverified,
    /// The node is not known to fsync every write and its uptime cannot be
    /// read (`INFO` denied to the user), so the delayed-restart rule cannot
    /// clear it.
    UnknownUptime,
    /// The node is the same server as another configured node (the same
    /// `run_id`: two names or addresses for one master), which casts the
    /// server's one vote.
    SameServer {
        /// The configured node whose vote counts for this server.
        as_node: NodeId,
    },
    /// The node's clock did not advance at the rate of real time between two
    /// probes (it jumped, stopped, or ran fast or slow beyond the drift
    /// allowance): keys it expires may expire early. Refused until its clock
    /// has been stable for the longest lease.
    ClockUnstable {
        /// How far the node's clock advanced between the probes, in ms.
        node_ms: i64,
        /// How far the local monotonic clock advanced, at most, in ms.
        local_ms: u64,
    },
    /// The server is older than the oldest the lock scripts run on
    /// ([`OLDEST_SERVER`](crate::OLDEST_SERVER)): they read the node's
    /// `TIME` before writing, which servers before 5.0 refuse in a script;
    /// or it is a cluster master's shard older than
    /// [`OLDEST_CLUSTER_SERVER`](crate::OLDEST_CLUSTER_SERVER) (no script flags).
    ServerTooOld {
        /// The version the server reports (`redis_version` of `INFO`).
        version: String,
    },
    /// A shard primary of a cluster master (`redis-cluster://`) that took
    /// over its slots less than the longest lease ago (a failover promoted
    /// it, or slots moved to a new shard): replication is asynchronous, so
    /// it may lack holds its predecessor granted.
    NewPrimary {
        /// How long ago it was seen taking over.
        age: Duration,
        /// The longest lease (`max_ttl`, else the TTL).
        max_ttl: Duration,
    },
    /// A fencing round's answer from a node that did not grant this hold
    /// before the grant was decided (its acquire landed later, or not at
    /// all): such a hold may have been taken after a later holder's, so it
    /// cannot order this token against that holder's (docs/fencing.md).
    NotAGranter,
}

impl fmt::Display for Ineligible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Replica => f.write_str("a replica, not a master"),
            Self::RecentRestart { uptime, max_ttl } => write!(
                f,
                "not durable and up for {}s, less than the max ttl {}s",
                uptime.as_secs(),
                max_ttl.as_secs()
            ),
            Self::Unverified => f.write_str("reconnected and not probed yet"),
            Self::UnknownUptime => {
                f.write_str("not known to be durable and its uptime is unknown (INFO denied)")
            }
            Self::SameServer { as_node } => {
                write!(f, "the same server as {as_node} (one master, one vote)")
            }
            Self::ClockUnstable { node_ms, local_ms } => write!(
                f,
                "its clock advanced {node_ms} ms while at most {local_ms} ms passed here"
            ),
            Self::ServerTooOld { version } => write!(
                f,
                "server version {version} is older than {}.{}, the oldest the lock scripts run on ({}.{} for a cluster master's shards)",
                crate::health::oldest_server::OLDEST_SERVER.0,
                crate::health::oldest_server::OLDEST_SERVER.1,
                crate::health::oldest_server::OLDEST_CLUSTER_SERVER.0,
                crate::health::oldest_server::OLDEST_CLUSTER_SERVER.1
            ),
            Self::NewPrimary { age, max_ttl } => write!(
                f,
                "a cluster shard primary that took over its slots {} ms ago, less than the max ttl {}s (a failover)",
                age.as_millis(),
                max_ttl.as_secs()
            ),
            Self::NotAGranter => f.write_str(
                "did not grant this hold (a fencing round counts only the nodes that granted it)",
            ),
        }
    }
}

impl Ineligible {
    /// A short stable name, used as the `reason` metric label.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Self::Replica => "replica",
            Self::RecentRestart { .. } => "recent_restart",
            Self::ClockUnstable { .. } => "clock_unstable",
            Self::Unverified => "unverified",
            Self::UnknownUptime => "unknown_uptime",
            Self::SameServer { .. } => "same_server",
            Self::ServerTooOld { .. } => "server_too_old",
            Self::NewPrimary { .. } => "new_primary",
            Self::NotAGranter => "not_a_granter",
        }
    }
}
