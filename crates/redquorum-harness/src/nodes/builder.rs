//! Starting local nodes: [`Cluster::start`], [`Cluster::start_with`] and
//! [`Cluster::builder`], whose [`ClusterBuilder`] sets persistence and
//! per-node clocks. Only this file starts a cluster of local nodes, and
//! `cluster.rs` does not know it: the dependency is one-way.

use std::sync::Mutex;

use super::cluster::{Cluster, Nodes};
use super::local::{LocalNode, ServerConfig};
use super::server::clock::{FastClock, faketime_support};
use super::server::persistence::Persistence;
use super::server::started::NodesDir;
use super::server::{major_version, redis_server_path};
use crate::error::HarnessError;

impl Cluster {
    /// Starts `n` local nodes without persistence.
    ///
    /// # Errors
    ///
    /// `redis-server` missing, or a node that does not start.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(5).unwrap();
    /// assert_eq!(cluster.len(), 5);
    /// ```
    pub fn start(n: usize) -> Result<Self, HarnessError> {
        Self::start_with(n, Persistence::None)
    }

    /// Starts `n` local nodes with the given persistence.
    ///
    /// # Errors
    ///
    /// `redis-server` missing, or a node that does not start.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{Cluster, Persistence};
    /// let cluster = Cluster::start_with(3, Persistence::AofAlways).unwrap();
    /// ```
    pub fn start_with(n: usize, persistence: Persistence) -> Result<Self, HarnessError> {
        Self::builder(n).persistence(persistence).start()
    }

    /// A builder for clusters with per-node settings (a fast clock on some nodes).
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{Cluster, Persistence};
    /// let cluster = Cluster::builder(3).persistence(Persistence::AofEverySec).start().unwrap();
    /// assert_eq!(cluster.len(), 3);
    /// ```
    pub fn builder(n: usize) -> ClusterBuilder {
        ClusterBuilder::new(n)
    }
}

/// Builds a [`Cluster`] whose nodes differ: persistence, and nodes whose clock runs fast.
///
/// # Examples
///
/// ```
/// use redquorum_harness::{Cluster, Persistence};
/// let cluster = Cluster::builder(3).persistence(Persistence::AofAlways).start().unwrap();
/// assert_eq!(cluster.len(), 3);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ClusterBuilder {
    n: usize,
    persistence: Persistence,
    clocks: Vec<(usize, f64)>,
    controlled: Vec<(usize, std::time::Duration)>,
    extra_args: Vec<String>,
    in_memory: bool,
}

impl ClusterBuilder {
    fn new(n: usize) -> Self {
        Self {
            n,
            persistence: Persistence::None,
            clocks: Vec::new(),
            controlled: Vec::new(),
            extra_args: Vec::new(),
            in_memory: false,
        }
    }

    /// More `redis-server` arguments for every node, after the usual ones:
    /// [`redis_cluster_args`](crate::redis_cluster_args) starts them in
    /// cluster mode (as [`ShardedCluster`](crate::ShardedCluster) does).
    /// Default: none.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::builder(1)
    ///     .server_args(&["--maxmemory", "10mb"])
    ///     .start()
    ///     .unwrap();
    /// let reply = cluster.command(0, &["CONFIG", "GET", "maxmemory"]).unwrap();
    /// let redquorum_harness::Reply::Array(Some(pair)) = reply else { panic!("{reply:?}") };
    /// assert_eq!(pair[1].as_text().as_deref(), Some("10485760"));
    /// ```
    pub fn server_args(mut self, args: &[&str]) -> Self {
        self.extra_args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// What every node writes to disk. Default: [`Persistence::None`].
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{Cluster, Persistence};
    /// let builder = Cluster::builder(1).persistence(Persistence::AofEverySec);
    /// ```
    pub fn persistence(mut self, persistence: Persistence) -> Self {
        self.persistence = persistence;
        self
    }

    /// Keeps the nodes' data directories on a RAM file system (`/dev/shm`,
    /// where there is one): what a node wrote survives its process being
    /// killed, as on disk, but no write waits for a disk shared with other
    /// work (with [`Persistence::AofAlways`], every write would). Default:
    /// the temporary directory.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{Cluster, Persistence};
    /// let cluster = Cluster::builder(1).persistence(Persistence::AofAlways).in_memory(true).start().unwrap();
    /// cluster.command(0, &["SET", "k", "v"]).unwrap();
    /// ```
    pub fn in_memory(mut self, in_memory: bool) -> Self {
        self.in_memory = in_memory;
        self
    }

    /// Node `index`'s clock runs `rate` times as fast as real time (libfaketime).
    /// Default: every clock is real.
    ///
    /// [`start`](Self::start) then needs [`faketime_support`](crate::faketime_support).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum_harness::Cluster::builder(3).fast_clock(2, 10.0);
    /// ```
    pub fn fast_clock(mut self, index: usize, rate: f64) -> Self {
        self.clocks.push((index, rate));
        self
    }

    /// Node `index`'s wall clock can be moved at run time
    /// ([`Cluster::set_clock_offset`]); it starts `offset` ahead of real time.
    /// Default: no node's clock is controlled.
    ///
    /// [`start`](Self::start) then needs [`faketime_support`](crate::faketime_support).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum_harness::Cluster::builder(3).controlled_clock(0, std::time::Duration::ZERO);
    /// ```
    pub fn controlled_clock(mut self, index: usize, offset: std::time::Duration) -> Self {
        self.controlled.push((index, offset));
        self
    }

    /// Starts the nodes.
    ///
    /// # Errors
    ///
    /// `redis-server` missing, a node that does not start, or
    /// [`HarnessError::FaketimeUnavailable`] when a fast clock was asked for.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::builder(1).start().unwrap();
    /// assert!(cluster.is_running(0));
    /// ```
    pub fn start(self) -> Result<Cluster, HarnessError> {
        let binary = redis_server_path()?;
        let support = if self.clocks.is_empty() && self.controlled.is_empty() {
            None
        } else {
            Some(faketime_support()?)
        };
        let debug_flag = major_version(&binary) >= 7;
        let shm = std::path::Path::new("/dev/shm");
        let mut root = tempfile::Builder::new();
        root.prefix("redquorum-nodes-");
        let root = if self.in_memory && shm.is_dir() {
            root.tempdir_in(shm)
        } else {
            root.tempdir()
        }
        .map_err(|source| HarnessError::Io {
            node: 0,
            action: "create temp dir",
            source,
        })?;
        let root = NodesDir::new(root);
        let mut nodes = Vec::with_capacity(self.n);
        let anchor = std::time::Instant::now();
        for index in 0..self.n {
            let dir = root.path().join(format!("node{index}"));
            std::fs::create_dir_all(&dir).map_err(|source| HarnessError::Io {
                node: index,
                action: "create node dir",
                source,
            })?;
            let clock = FastClock::for_node(
                index,
                &dir,
                anchor,
                &self.clocks,
                &self.controlled,
                support.as_ref(),
            )?;
            nodes.push(LocalNode::new(dir, clock));
        }
        let cluster = Cluster {
            nodes: Nodes::Local {
                server: ServerConfig {
                    binary,
                    debug_flag,
                    persistence: self.persistence,
                    extra_args: self.extra_args,
                },
                nodes: Mutex::new(nodes),
                _root: root,
            },
        };
        // Spawn all, then wait for all, so start-ups overlap. A free port can
        // be taken between probing and binding: respawn such nodes a few times.
        let mut last_error = None;
        for _attempt in 0..5 {
            for index in 0..self.n {
                if !cluster.is_running(index) {
                    cluster.spawn_on_free_port(index)?;
                }
            }
            last_error = None;
            for index in 0..self.n {
                if let Err(e) = cluster.wait_ready(index) {
                    cluster.kill(index)?;
                    last_error = Some(e);
                }
            }
            if last_error.is_none() {
                break;
            }
        }
        if let Some(e) = last_error {
            return Err(e);
        }
        Ok(cluster)
    }
}
