//! The oldest servers the lock scripts run on: a node's health
//! (`node_health.rs`) compares its version with them, and a refusal
//! (`ineligible.rs`) names them.

/// The oldest server version (major, minor) the lock scripts run on: they
/// read the node's `TIME` before writing, which a script may do only from
/// 5.0 (effects replication by default). An older node's votes are refused
/// ([`Ineligible::ServerTooOld`](crate::Ineligible::ServerTooOld)) rather
/// than failing every call with a script error. The oldest version tested is 5.0.10 (README, "Servers").
///
/// # Examples
///
/// ```
/// assert_eq!(redquorum::OLDEST_SERVER, (5, 0));
/// ```
pub const OLDEST_SERVER: (u32, u32) = (5, 0);

/// The oldest server a cluster master's shards (`redis-cluster://`) run
/// the lock script on: its cluster form needs script flags (Redis 7.0,
/// Valkey 7.2 or later). An older shard's votes are refused
/// ([`Ineligible::ServerTooOld`](crate::Ineligible::ServerTooOld)).
///
/// # Examples
///
/// ```
/// assert_eq!(redquorum::OLDEST_CLUSTER_SERVER, (7, 0));
/// ```
pub const OLDEST_CLUSTER_SERVER: (u32, u32) = (7, 0);
