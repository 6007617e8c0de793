//! A hand-off window (`Batcher::hold`) open on every server of every node
//! while a release runs with local waiters: the release and the acquire of
//! the waiter it wakes leave together as one call (`Quorum::release`).

use std::sync::Arc;

use crate::node::master::Node;
use crate::node::nodes::Nodes;
use crate::node::server::Server;

/// A hand-off window open on every server of every node (see
/// `Batcher::hold`), closed on drop on the same servers (a cluster master's
/// shards may change meanwhile).
pub(super) struct HandOffWindow {
    servers: Vec<Arc<Server>>,
}

impl HandOffWindow {
    pub(super) fn open(nodes: &Nodes) -> Self {
        let servers: Vec<Arc<Server>> = nodes.iter().flat_map(Node::servers).collect();
        servers.iter().for_each(|server| server.hold_batches());
        Self { servers }
    }
}

impl Drop for HandOffWindow {
    fn drop(&mut self) {
        self.servers
            .iter()
            .for_each(|server| server.unhold_batches());
    }
}
