//! A hand-off window (`Batcher::hold`) open on every server of every node
//! while a release runs with local waiters: the release and the acquire of
//! the waiter it wakes leave together as one call (`Quorum::release`).

use std::sync::Arc;
use std::time::Duration;

use crate::node::master::Node;
use crate::node::nodes::Nodes;
use crate::node::server::Server;

/// How long a window stays open for the head its release woke to queue
/// its acquire (`wait/waiters.rs` `Joining`): the head may run on another
/// thread, usually within tens of microseconds; one that comes later (a
/// starved thread, a waiter that gave up) sends its acquire alone, and
/// costs the release no more than this.
pub(super) const JOIN_WITHIN: Duration = Duration::from_millis(1);

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
