//! A cluster master: one voter (`redis-cluster://`) whose keys are spread
//! over the shards of a Redis (or Valkey) Cluster by hash slot.
//!
//! Each shard primary is a [`Server`] of its own (its connection, batcher,
//! link and probes), so group commit, down detection and the vote rules
//! work per shard as they do for a single master. An operation goes to the
//! primary serving its keys' slot (every key of one resource shares a slot:
//! protocol/keys.rs); one whose keys span two shards (a multi-lock) fails
//! with [`cross_shard`] and is never split.
//!
//! The slot map comes from `CLUSTER SLOTS`, read at the first call (in a
//! task of its own: cluster/first_map.rs), every health-probe interval,
//! and at once after a redirection or a shard going down. Operations
//! submitted while the first map is read wait for it, in order. A server
//! that becomes a primary after the first map (a failover promoted it, or
//! a new shard took slots) may lack holds its predecessor granted
//! (replication is asynchronous), so its votes are refused for the longest
//! lease (`Ineligible::NewPrimary`); so are a primary's promoted since its
//! last answer, which no map may show (failed over away and back between
//! two reads): every answer carries the server's replication id
//! (node/batch/replication_id.rs).
//!
//! Redirections: `MOVED`, `ASK`, `TRYAGAIN` and `CLUSTERDOWN` are answered
//! before anything runs. What undoes earlier operations (a release, an
//! unwind) follows them to where the keys are now (after `ASKING` for an
//! `ASK`), within the node timeout. Anything else fails with the
//! redirection and is not sent again: a late acquire could land after its
//! own unwind.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use fred::error::{Error as FredError, ErrorKind};
use fred::prelude::Config;
use fred::types::ConnectHandle;
use futures::future::BoxFuture;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::node::server::{Answered, Server, ServerSettings};
use crate::node::slots::{Address, Redirect, SlotTable, slot_of};
use crate::node_id::NodeId;
use crate::protocol::op::Op;

mod first_map;
mod map;
mod redirect;

use first_map::FirstMap;
use redirect::DetachOnDrop;

/// Most times a release follows redirections before it gives up (its hold
/// then ends with its TTL).
const MAX_REDIRECTS: usize = 5;

/// A Redis Cluster voting as one master.
#[derive(Debug)]
pub(crate) struct ClusterMaster {
    id: NodeId,
    /// Where the slot map is asked for when no known primary answers: the
    /// seeds, then every server a map named (replicas included).
    seeds: std::sync::Mutex<Vec<Address>>,
    /// Credentials, TLS and protocol for every shard's connection.
    template: Config,
    settings: ServerSettings,
    topology: RwLock<Topology>,
    /// Wakes the refresher at once (a redirection, a shard down).
    wake: Notify,
    /// Counts the slot maps read; a redirected release waits for the next.
    maps_read: watch::Sender<u64>,
    /// One refresh at a time.
    refreshing: tokio::sync::Mutex<()>,
    /// The first map's read, and the operations waiting for it.
    first_map: FirstMap,
    /// Where a release that follows a redirection runs (the `Redlock`'s runtime).
    runtime: tokio::runtime::Handle,
}

/// The slot map and the servers of its primaries.
#[derive(Debug, Default)]
struct Topology {
    table: Option<SlotTable>,
    shards: HashMap<Address, Shard>,
}

/// A shard primary's server and the tasks that keep it connected.
#[derive(Debug)]
struct Shard {
    server: Arc<Server>,
    connection: ConnectHandle,
    tasks: [JoinHandle<()>; 3],
}

impl Shard {
    fn stop(&self) {
        self.tasks.iter().for_each(JoinHandle::abort);
        self.connection.abort();
    }
}

impl Drop for Shard {
    /// A shard dropped unused (its refresh was cut short) leaves no
    /// connection behind.
    fn drop(&mut self) {
        self.stop();
    }
}

/// The error of an operation whose keys two shards serve.
pub(crate) fn cross_shard(shards: &[&Address]) -> FredError {
    let names: Vec<String> = shards
        .iter()
        .map(|(host, port)| format!("{host}:{port}"))
        .collect();
    FredError::new(
        ErrorKind::InvalidArgument,
        format!(
            "CROSSSHARD the operation's keys are served by several shards of a cluster master ({}); one operation runs on one shard",
            names.join(", ")
        ),
    )
}

impl ClusterMaster {
    /// A cluster master known by `seeds`, not yet connected (requires a
    /// Tokio runtime).
    pub(crate) fn new(
        id: NodeId,
        seeds: Vec<Address>,
        template: Config,
        settings: ServerSettings,
    ) -> Self {
        Self {
            id,
            seeds: std::sync::Mutex::new(seeds),
            template,
            settings,
            topology: RwLock::default(),
            wake: Notify::new(),
            maps_read: watch::Sender::new(0),
            refreshing: tokio::sync::Mutex::new(()),
            first_map: FirstMap::new(),
            runtime: tokio::runtime::Handle::current(),
        }
    }

    pub(crate) fn id(&self) -> &NodeId {
        &self.id
    }

    /// The shard primaries serving `op`'s keys, when there are several.
    pub(crate) fn shards_of(&self, op: &Op) -> Option<Vec<String>> {
        let topology = self.read();
        let table = topology.table.as_ref()?;
        let mut owners: Vec<&Address> = Vec::new();
        for owner in op.keys.iter().filter_map(|key| table.owner(slot_of(key))) {
            if !owners.contains(&owner) {
                owners.push(owner);
            }
        }
        (owners.len() > 1).then(|| {
            owners
                .iter()
                .map(|(host, port)| format!("{host}:{port}"))
                .collect()
        })
    }

    /// The primary serving every key of `op`, or why there is none.
    pub(crate) fn route(&self, op: &Op) -> Result<Arc<Server>, FredError> {
        let topology = self.read();
        let table = topology.table.as_ref().ok_or_else(|| {
            FredError::new(
                ErrorKind::IO,
                "cluster slot map unknown: no server of the cluster answered CLUSTER SLOTS",
            )
        })?;
        let mut owner: Option<&Address> = None;
        for key in &op.keys {
            let slot = slot_of(key);
            let this = table.owner(slot).ok_or_else(|| {
                FredError::new(
                    ErrorKind::IO,
                    format!("CLUSTERDOWN slot {slot} is served by no primary"),
                )
            })?;
            match owner {
                Some(first) if first != this => return Err(cross_shard(&[first, this])),
                _ => owner = Some(this),
            }
        }
        let owner = owner.ok_or_else(|| {
            FredError::new(ErrorKind::InvalidArgument, "an operation without keys")
        })?;
        topology
            .shards
            .get(owner)
            .map(|shard| Arc::clone(&shard.server))
            .ok_or_else(|| FredError::new(ErrorKind::IO, "shard primary not connected yet"))
    }

    /// Why no operation can reach the cluster: its slot map is unknown, or
    /// every shard primary is down (the first one's cause); `None` while
    /// one is up, or while the first map is read (operations wait for it).
    pub(crate) fn down(&self) -> Option<FredError> {
        if self.first_map.reading() {
            return None;
        }
        let topology = self.read();
        if topology.shards.is_empty() {
            return Some(FredError::new(
                ErrorKind::IO,
                "cluster slot map unknown: no server of the cluster answered CLUSTER SLOTS",
            ));
        }
        let mut first = None;
        for shard in topology.shards.values() {
            match shard.server.down() {
                None => return None,
                Some(cause) => first = first.or(Some(on_shard(&shard.server, cause))),
            }
        }
        first
    }

    /// The shard servers now.
    pub(crate) fn servers(&self) -> Vec<Arc<Server>> {
        self.read()
            .shards
            .values()
            .map(|shard| Arc::clone(&shard.server))
            .collect()
    }

    /// Starts `op` on the primary serving its keys (see `Server::submit`),
    /// or parks it until the first map is read (cluster/first_map.rs); its
    /// answer comes with the server that gave it (whose vote rules
    /// apply). A redirection wakes the refresher. What undoes earlier
    /// operations follows it in the caller's task, handed to a task of its own
    /// if the caller stops waiting (`DetachOnDrop`: a release returns at a
    /// quorum, and what it owes must still land).
    pub(crate) fn submit(
        self: &Arc<Self>,
        op: Op,
    ) -> Result<BoxFuture<'static, Answered>, FredError> {
        match self.first_map.park(op, self.settings.node_timeout) {
            Ok(parked) => Ok(parked),
            Err(op) => self.send(op),
        }
    }

    /// Starts `op` on the primary serving its keys (see [`Self::submit`]).
    fn send(self: &Arc<Self>, op: Op) -> Result<BoxFuture<'static, Answered>, FredError> {
        let server = self.route(&op)?;
        let again = op.undoes().then(|| op.clone());
        let answer = match server.submit(op) {
            Ok(answer) => answer,
            Err(cause) => {
                self.wake.notify_one();
                return Err(on_shard(&server, cause));
            }
        };
        let this = Arc::clone(self);
        let by = Some(Arc::clone(&server));
        let Some(op) = again else {
            // Anything else fails with the redirection: a late acquire
            // could land after its own unwind.
            return Ok(Box::pin(async move {
                let reply = answer.await.map_err(|error| {
                    if Redirect::parse(error.details()).is_some() {
                        this.wake.notify_one();
                    }
                    on_shard(&server, error)
                });
                Answered { reply, by }
            }));
        };
        let undo = DetachOnDrop::new(
            Box::pin(async move {
                match answer.await {
                    Err(error) => match Redirect::parse(error.details()) {
                        Some(redirect) => {
                            this.wake.notify_one();
                            this.follow(op, redirect, error).await
                        }
                        None => Err(on_shard(&server, error)),
                    },
                    ok => ok,
                }
            }),
            self.runtime.clone(),
        );
        Ok(Box::pin(async move {
            // The server the operation was routed to answers for it (a
            // release's vote counts whoever answers: `Code::releases`).
            Answered {
                reply: undo.await,
                by,
            }
        }))
    }

    /// Closes every shard's connection and stops its tasks.
    pub(crate) fn stop(&self) {
        self.read().shards.values().for_each(Shard::stop);
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Topology> {
        self.topology
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Topology> {
        self.topology
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `error` said as the answer of the shard primary `server`.
fn on_shard(server: &Server, error: FredError) -> FredError {
    FredError::new(
        error.kind().clone(),
        format!("shard {}: {}", server.id(), error.details()),
    )
}
