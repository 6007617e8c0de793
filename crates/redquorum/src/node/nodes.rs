//! The N masters and their background work: connections, script loaders
//! and health probers, the first-connect wait, and the vote rules that span
//! nodes (one server reached under two names votes once).

use std::time::Duration;

use futures::FutureExt;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::OnceCell;
use tokio::task::JoinHandle;

use crate::health::ineligible::Ineligible;
use crate::health::node_health::NodeHealth;
use crate::node::master::Node;
use crate::node::server::Server;
use crate::node_id::NodeId;
use crate::outcome::NodeOutcome;
use crate::protocol::op::Op;

/// The configured masters, connected.
#[derive(Debug)]
pub(crate) struct Nodes {
    nodes: Vec<Node>,
    tasks: Vec<JoinHandle<()>>,
    /// Set once the first connection attempt to every node has settled.
    connected: OnceCell<()>,
    /// Bound on that first wait, so a hung node cannot stall the first call.
    connect_timeout: Duration,
    /// The node timeout: once a quorum has connected, how much longer the
    /// first wait gives the rest (a node that is down never reports its
    /// first connect: fred keeps retrying), and how long a closing
    /// `Redlock` stays open for the calls still owed to the nodes.
    node_timeout: Duration,
    /// The quorum size of N nodes: quorum/'s rule, handed in by setup/ (that
    /// layer sits above this one), asked at each use.
    quorum_of: fn(usize) -> usize,
}

impl Nodes {
    /// Starts every node's connection and background tasks (requires a Tokio runtime).
    pub(crate) fn start(
        nodes: Vec<Node>,
        quorum_of: fn(usize) -> usize,
        connect_timeout: Duration,
        node_timeout: Duration,
    ) -> Self {
        let tasks = nodes.iter().flat_map(Node::start).collect();
        Self {
            nodes,
            tasks,
            connected: OnceCell::new(),
            connect_timeout,
            node_timeout,
            quorum_of,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter()
    }

    pub(crate) fn get(&self, index: usize) -> &Node {
        &self.nodes[index]
    }

    pub(crate) fn ids(&self) -> impl Iterator<Item = &NodeId> {
        self.nodes.iter().map(Node::id)
    }

    /// How many nodes an operation needs: `N/2 + 1`.
    pub(crate) fn quorum(&self) -> usize {
        (self.quorum_of)(self.nodes.len())
    }

    /// The first cluster master on which `op`'s keys are served by several
    /// shards, with those shards (a multi-lock that cannot run there).
    pub(crate) fn cross_shard(&self, op: &Op) -> Option<(NodeId, Vec<String>)> {
        self.nodes.iter().find_map(|node| match node {
            Node::Cluster(cluster) => cluster.shards_of(op).map(|s| (node.id().clone(), s)),
            Node::Single(..) => None,
        })
    }

    /// Waits, on first use only, until every node's first connection attempt
    /// succeeded or failed (at most the connect timeout). Without it the
    /// first calls would sit in fred's queue during the handshake and time out.
    pub(crate) async fn first_connect(&self) {
        self.connected
            .get_or_init(|| async {
                let mut attempts: FuturesUnordered<_> =
                    self.nodes.iter().map(Node::first_connect).collect();
                let mut deadline = tokio::time::Instant::now() + self.connect_timeout;
                let mut ready = 0;
                while let Ok(Some(up)) = tokio::time::timeout_at(deadline, attempts.next()).await {
                    ready += usize::from(up);
                    if ready == self.quorum() {
                        deadline = deadline.min(tokio::time::Instant::now() + self.node_timeout);
                    }
                }
                // Stops waiting only: the connections go on in their own
                // tasks, and so does a cluster's first slot map, which the
                // calls made meanwhile wait for (node/cluster/first_map.rs).
                drop(attempts);
                self.warn_about_aliases();
            })
            .await;
    }

    /// Turns node `index`'s vote, given by its server `by`, into `Refused`
    /// when it may not count toward a quorum now. Checked after the reply,
    /// so a reconnection (a possible restart) that carried this very reply
    /// is seen.
    pub(crate) fn admit(
        &self,
        index: usize,
        by: Option<&Server>,
        outcome: NodeOutcome,
    ) -> NodeOutcome {
        if !outcome.is_acquired() {
            return outcome;
        }
        match self.refusal(index, by) {
            Some(reason) => {
                crate::metrics::vote_refused(self.nodes[index].id(), &reason);
                NodeOutcome::Refused(reason)
            }
            None => outcome,
        }
    }

    /// Why node `index`'s votes, given by its server `by`, are refused now.
    fn refusal(&self, index: usize, by: Option<&Server>) -> Option<Ineligible> {
        self.same_server_as(index)
            .map(|as_node| Ineligible::SameServer { as_node })
            .or_else(|| by.and_then(Server::refusal))
    }

    /// The first configured node that shares a server with node `index`
    /// (same run id: one server, or one cluster, named twice), if it comes
    /// before it: that one votes for the server.
    fn same_server_as(&self, index: usize) -> Option<NodeId> {
        let run_ids = self.nodes[index].run_ids();
        if run_ids.is_empty() {
            return None;
        }
        self.nodes[..index]
            .iter()
            .find(|other| other.run_ids().iter().any(|id| run_ids.contains(id)))
            .map(|other| other.id().clone())
    }

    fn warn_about_aliases(&self) {
        for index in 0..self.nodes.len() {
            if let Some(as_node) = self.same_server_as(index) {
                let node = self.nodes[index].id();
                tracing::error!(%node, %as_node, "two configured nodes are one server: only one of them votes; configure independent masters");
            }
        }
    }

    /// Every node's cached health (after the first connection attempts).
    pub(crate) async fn health(&self) -> Vec<(NodeId, NodeHealth)> {
        self.first_connect().await;
        (0..self.nodes.len())
            .map(|index| {
                let node = &self.nodes[index];
                let mut health = node.health();
                if let Some(as_node) = self.same_server_as(index) {
                    health.refusal = Some(Ineligible::SameServer { as_node });
                }
                (node.id().clone(), health)
            })
            .collect()
    }

    /// Resolves once no call of ours is in flight on any node: the
    /// releases a caller stopped waiting for (quorum/coordinator.rs) have ended.
    fn drained(&self) -> impl Future<Output = ()> + Send + 'static {
        futures::future::join_all(self.nodes.iter().map(Node::drained)).map(drop)
    }

    /// Lets the calls still owed to the nodes end (bounded by the node
    /// timeout), then closes every connection (each bounded by the node
    /// timeout) and stops the background tasks.
    pub(crate) async fn stop(&self) {
        self.tasks.iter().for_each(JoinHandle::abort);
        let _ = tokio::time::timeout(self.node_timeout, self.drained()).await;
        futures::future::join_all(self.nodes.iter().map(Node::quit)).await;
        self.nodes.iter().for_each(Node::close);
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        // Probes and watchers: nothing can use these clients any more.
        self.tasks.iter().for_each(JoinHandle::abort);
        // The reconnect loops stop once the calls still owed to the nodes
        // (a release that returned at a quorum) have ended, bounded by the
        // node timeout: stopping them at once would cut those releases and
        // leave their keys to the TTL.
        let (drained, timeout) = (self.drained(), self.node_timeout);
        let nodes = std::mem::take(&mut self.nodes);
        let abort = move || nodes.iter().for_each(Node::close);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = tokio::time::timeout(timeout, drained).await;
                    abort();
                });
            }
            Err(_) => abort(),
        }
    }
}
