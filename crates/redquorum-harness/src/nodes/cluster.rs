//! `Cluster`: N Redis masters for tests, local processes or nodes given by
//! URL, and the table of its local nodes. Its methods live by concern:
//! starting in `builder.rs`, nodes given by URL in `external.rs`, addresses
//! and connections in `connect.rs`, process faults in `process.rs` (each
//! delegating to a `LocalNode`, `local.rs`), command faults in `commands.rs`.

use std::sync::{Mutex, MutexGuard};

use super::local::{LocalNode, ServerConfig};
use super::server::started::NodesDir;
use crate::error::HarnessError;

/// Where the nodes come from.
#[derive(Debug)]
pub(super) enum Nodes {
    /// Started here; process control available.
    Local {
        /// How each node's server is started.
        server: ServerConfig,
        /// The nodes, by index.
        nodes: Mutex<Vec<LocalNode>>,
        /// Every node's data directory lives below it; removed after the nodes stop.
        _root: NodesDir,
    },
    /// From `REDQUORUM_NODES`: URLs only.
    External {
        /// The nodes' URLs, by index.
        urls: Vec<String>,
    },
}

/// A set of Redis masters for tests: local processes, or external nodes.
///
/// Local processes are killed when the `Cluster` is dropped, including
/// during a panic's unwinding. Methods take `&self`, so a cluster can be
/// shared (in an `Arc`) between a test and a fault-injecting task.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use redquorum_harness::Cluster;
///
/// let cluster = Cluster::start(3)?;
/// assert_eq!(cluster.urls().len(), 3);
/// cluster.kill(0)?;
/// assert!(!cluster.is_running(0));
/// cluster.restart(0)?;
/// assert!(cluster.is_running(0));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Cluster {
    pub(super) nodes: Nodes,
}

impl Cluster {
    /// The number of nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::Cluster::start(1).unwrap().len(), 1);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.nodes {
            Nodes::Local { nodes, .. } => lock(nodes).len(),
            Nodes::External { urls } => urls.len(),
        }
    }

    /// True for a cluster of no nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!redquorum_harness::Cluster::start(1).unwrap().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the nodes come from `REDQUORUM_NODES`.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert!(!cluster.is_external());
    /// ```
    #[must_use]
    pub fn is_external(&self) -> bool {
        matches!(self.nodes, Nodes::External { .. })
    }

    /// True when node `index`'s process is running (external nodes: always true).
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert!(cluster.is_running(0));
    /// ```
    #[must_use]
    pub fn is_running(&self, index: usize) -> bool {
        match &self.nodes {
            Nodes::Local { nodes, .. } => lock(nodes)
                .get_mut(index)
                .is_some_and(LocalNode::is_running),
            Nodes::External { .. } => true,
        }
    }

    /// Locks the local node table, or refuses for external nodes / bad indexes.
    pub(super) fn local(
        &self,
        index: usize,
    ) -> Result<MutexGuard<'_, Vec<LocalNode>>, HarnessError> {
        match &self.nodes {
            Nodes::Local { nodes, .. } => {
                let guard = lock(nodes);
                if index < guard.len() {
                    Ok(guard)
                } else {
                    Err(HarnessError::NoSuchNode(index))
                }
            }
            Nodes::External { .. } => Err(HarnessError::External(index)),
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Nodes::Local { nodes, .. } = &self.nodes {
            for node in lock(nodes).iter_mut() {
                node.stop();
            }
        }
    }
}

/// The mutex guards plain data; a panic elsewhere cannot leave it inconsistent.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
