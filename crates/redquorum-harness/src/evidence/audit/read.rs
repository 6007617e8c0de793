//! One read of one voter's lock keys for the key audit: a single server
//! (one `EVAL` of `audit.lua`), or a cluster master (the same on each of
//! its shard primaries now, merged). A read that fails anywhere is no read
//! at all, so a master half read never makes holds look gone.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;
use std::time::Duration;

use super::config::LockKeys;
use crate::nodes::{Cluster, Reply, RespConn, ShardedCluster};

/// Reads `(key, owner, pttl)` triples of the matching lock keys. A string
/// key's owner is its value. A hash is a lock record in the library's layout
/// (`protocol/keys.rs`, `protocol/scripts/ops/`): one triple per live hold, a field
/// `h:<token>` whose value is the hold's expiry in node time, so its "pttl"
/// is that expiry less the node's clock, or the key's PTTL when shorter (every kind: plain, reentrant, read,
/// write; a writer's `intent` is not a hold and is skipped).
const AUDIT_LUA: &str = include_str!("audit.lua");

/// How long a read may wait for a node (a paused one never answers).
const TIMEOUT: Duration = Duration::from_millis(100);

/// A live hold as read: key, owner, time left in ms (−1: no expiry).
pub(super) type Sighting = (String, String, i64);

/// One good read of a voter: its live holds, and its fence counters (key,
/// value; keys ending in the excluded suffix that hold a number).
#[derive(Debug, Default)]
pub(super) struct VoterRead {
    pub(super) holds: Vec<Sighting>,
    pub(super) counters: Vec<(String, u64)>,
}

/// The voters the audit reads, with a connection kept per server.
#[derive(Debug)]
pub(super) enum Voters {
    /// Single servers, by index.
    Servers {
        cluster: Arc<Cluster>,
        conns: Vec<Option<RespConn>>,
    },
    /// Cluster masters, by index; connections by port.
    Sharded {
        sharded: Arc<ShardedCluster>,
        conns: HashMap<u16, RespConn>,
    },
}

impl Voters {
    /// Single servers.
    pub(super) fn servers(cluster: Arc<Cluster>) -> Self {
        let conns = (0..cluster.len()).map(|_| None).collect();
        Self::Servers { cluster, conns }
    }

    /// Cluster masters.
    pub(super) fn sharded(sharded: Arc<ShardedCluster>) -> Self {
        Self::Sharded {
            sharded,
            conns: HashMap::new(),
        }
    }

    /// How many voters.
    pub(super) fn len(&self) -> usize {
        match self {
            Self::Servers { cluster, .. } => cluster.len(),
            Self::Sharded { sharded, .. } => sharded.len(),
        }
    }

    /// Voter `node`'s live holds and fence counters now, or `None` when it
    /// could not be read whole (down, paused, or, for a cluster master, any
    /// of its primaries).
    pub(super) fn read(&mut self, node: usize, keys: &LockKeys) -> Option<VoterRead> {
        match self {
            Self::Servers { cluster, conns } => {
                let slot = &mut conns[node];
                if slot.is_none() {
                    // A paused or killed node: try again next round.
                    *slot = RespConn::connect_addr(&cluster.host_port(node), TIMEOUT).ok();
                }
                let read = eval(slot.as_mut()?, keys, false);
                if read.is_none() {
                    *slot = None;
                }
                read
            }
            Self::Sharded { sharded, conns } => {
                let mut all = VoterRead::default();
                for shard in 0..sharded.shards() {
                    let primary = sharded.primary_index(node, shard);
                    if !sharded.master(node).is_running(primary) {
                        return None;
                    }
                    let port = sharded.primary_port(node, shard);
                    let conn = match conns.entry(port) {
                        Entry::Occupied(conn) => conn.into_mut(),
                        Entry::Vacant(slot) => slot.insert(
                            RespConn::connect_addr(&format!("127.0.0.1:{port}"), TIMEOUT).ok()?,
                        ),
                    };
                    match eval(conn, keys, true) {
                        Some(read) => {
                            all.holds.extend(read.holds);
                            all.counters.extend(read.counters);
                        }
                        None => {
                            conns.remove(&port);
                            return None;
                        }
                    }
                }
                Some(all)
            }
        }
    }
}

/// `audit.lua` on one server. On a cluster node, after `ASKING`: a slot's
/// migration target then reads the keys it imports too.
fn eval(conn: &mut RespConn, keys: &LockKeys, asking: bool) -> Option<VoterRead> {
    if asking && !matches!(conn.command(&["ASKING"]), Ok(Reply::Status(_))) {
        return None;
    }
    let reply = conn.command(&["EVAL", AUDIT_LUA, "0", &keys.pattern, &keys.exclude_suffix]);
    let Ok(Reply::Array(Some(parts))) = reply else {
        return None;
    };
    let [Reply::Array(Some(holds)), Reply::Array(Some(counters))] = parts.as_slice() else {
        return None;
    };
    let holds = holds
        .chunks_exact(3)
        .filter_map(|triple| {
            Some((
                triple[0].as_text()?,
                triple[1].as_text()?,
                triple[2].as_int()?,
            ))
        })
        .collect();
    let counters = counters
        .chunks_exact(2)
        .filter_map(|pair| Some((pair[0].as_text()?, pair[1].as_text()?.parse().ok()?)))
        .collect();
    Some(VoterRead { holds, counters })
}
