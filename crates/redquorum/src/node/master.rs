//! One of the N masters, one vote: a single Redis server (`redis://`), or
//! a Redis Cluster whose shards share the vote by slot (`redis-cluster://`,
//! node/cluster.rs). Everything above this file sees a master, never a shard.

use std::fmt;
use std::sync::{Arc, Mutex};

use fred::error::Error as FredError;
use fred::types::ConnectHandle;
use tokio::task::JoinHandle;

use crate::health::node_health::NodeHealth;
use crate::node::cluster::ClusterMaster;
use crate::node::server::{Answered, Server};
use crate::node_id::NodeId;
use crate::protocol::op::{Op, Reply};

/// One master: the servers behind one vote.
pub(crate) enum Node {
    /// One server, with its connection task once started.
    Single(Arc<Server>, Mutex<Option<ConnectHandle>>),
    /// A Redis Cluster.
    Cluster(Arc<ClusterMaster>),
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Single(server, _) => server.fmt(f),
            Node::Cluster(cluster) => f.debug_tuple("Cluster").field(cluster.id()).finish(),
        }
    }
}

impl Node {
    /// A single-server master.
    pub(crate) fn single(server: Server) -> Self {
        Node::Single(Arc::new(server), Mutex::new(None))
    }

    pub(crate) fn id(&self) -> &NodeId {
        match self {
            Node::Single(server, _) => server.id(),
            Node::Cluster(cluster) => cluster.id(),
        }
    }

    /// Every server behind the vote now (a cluster's shard primaries).
    pub(crate) fn servers(&self) -> Vec<Arc<Server>> {
        match self {
            Node::Single(server, _) => vec![Arc::clone(server)],
            Node::Cluster(cluster) => cluster.servers(),
        }
    }

    /// Why the master is down, or `None` while it may answer: a cluster is
    /// down only when no shard primary is up (or its slot map is unknown);
    /// a shard that is down fails the operations routed to it.
    pub(crate) fn down(&self) -> Option<FredError> {
        match self {
            Node::Single(server, _) => server.down(),
            Node::Cluster(cluster) => cluster.down(),
        }
    }

    /// Starts one operation now on the server for its keys and returns its
    /// answer to come (see [`Server::submit`]); or says at once why it
    /// cannot (that server is down, a cluster's keys span shards).
    pub(crate) fn submit(
        &self,
        op: Op,
    ) -> Result<impl Future<Output = Answered> + Send + '_, FredError> {
        let answer: futures::future::BoxFuture<'_, Answered> = match self {
            Node::Single(server, _) => {
                let answer = server.submit(op)?;
                let by = Some(Arc::clone(server));
                Box::pin(async move {
                    Answered {
                        reply: answer.await,
                        by,
                    }
                })
            }
            Node::Cluster(cluster) => cluster.submit(op)?,
        };
        Ok(answer)
    }

    /// Runs one operation to its answer.
    pub(crate) async fn run(&self, op: Op) -> Reply {
        match self.submit(op) {
            Ok(answer) => answer.await.reply,
            Err(cause) => Err(cause),
        }
    }

    /// The keys matching `pattern` on every server (see [`Server::scan`]).
    pub(crate) async fn scan(
        &self,
        pattern: &str,
        limit: usize,
        max_calls: usize,
    ) -> Result<Vec<String>, FredError> {
        let mut found = Vec::new();
        for server in self.servers() {
            found.extend(server.scan(pattern, limit, max_calls).await?);
        }
        Ok(found)
    }

    /// Starts the connections and background tasks; returns the tasks to
    /// stop at once when the `Redlock` goes (connections end in
    /// [`Node::close`]).
    pub(crate) fn start(&self) -> Vec<JoinHandle<()>> {
        match self {
            Node::Single(server, connection) => {
                let (handle, tasks) = server.start();
                *crate::sync::lock(connection) = Some(handle);
                tasks.into()
            }
            Node::Cluster(cluster) => vec![cluster.spawn_refresher()],
        }
    }

    /// Waits for the first connection (a cluster: its slot map and its
    /// primaries); whether the master can be reached.
    pub(crate) async fn first_connect(&self) -> bool {
        match self {
            Node::Single(server, _) => server.first_connect().await,
            Node::Cluster(cluster) => cluster.first_connect().await,
        }
    }

    /// The run ids of the servers behind the vote, once probed.
    pub(crate) fn run_ids(&self) -> Vec<String> {
        self.servers().iter().filter_map(|s| s.run_id()).collect()
    }

    /// The master's health: a single server's, or for a cluster the first
    /// shard's that is down or refused (else any shard's), with the
    /// shortest uptime of its shards.
    pub(crate) fn health(&self) -> NodeHealth {
        let healths: Vec<(NodeId, NodeHealth)> = self
            .servers()
            .iter()
            .map(|server| (server.id().clone(), server.health()))
            .collect();
        let mut worst = healths
            .iter()
            .find(|(_, h)| h.down.is_some() || h.refusal.is_some())
            .or(healths.first())
            .map(|(id, health)| {
                let mut health = health.clone();
                if matches!(self, Node::Cluster(_)) {
                    health.down = health.down.map(|down| format!("shard {id}: {down}"));
                }
                health
            })
            .unwrap_or_default();
        worst.uptime = healths.iter().filter_map(|(_, h)| h.uptime).min();
        if healths.is_empty() {
            worst.down = self.down().map(|cause| cause.details().to_owned());
        }
        worst
    }

    /// Resolves once no call of ours is in flight on any of its servers;
    /// owns what it needs, so it may outlive the node.
    pub(crate) fn drained(&self) -> impl Future<Output = ()> + Send + use<> {
        let waits: Vec<_> = self
            .servers()
            .iter()
            .map(|server| server.drained())
            .collect();
        async move {
            futures::future::join_all(waits).await;
        }
    }

    /// Asks every server to close our connection (each bounded by the node timeout).
    pub(crate) async fn quit(&self) {
        let servers = self.servers();
        futures::future::join_all(servers.iter().map(|server| server.quit())).await;
    }

    /// Stops the connection tasks (reconnect loops).
    pub(crate) fn close(&self) {
        match self {
            Node::Single(_, connection) => {
                if let Some(handle) = crate::sync::lock(connection).take() {
                    handle.abort();
                }
            }
            Node::Cluster(cluster) => cluster.stop(),
        }
    }
}
