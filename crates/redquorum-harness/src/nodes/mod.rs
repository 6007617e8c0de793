//! Nodes: the life of local `redis-server` processes, and nodes given by URL.
//!
//! What lives here: [`Cluster`] (start, stop, restart, pause, snapshot and
//! roll back, the node-side faults sent as commands), [`ClusterBuilder`]
//! (per-node persistence and clocks), libfaketime ([`faketime_support`]),
//! `TlsCluster` (feature `tls`), the tiny blocking RESP client the harness
//! talks to nodes with ([`RespConn`]), and [`example_binary`].
//!
//! What it is for: every other layer reaches Redis through here, and
//! nothing here knows about locks, faults schedules or histories.
//!
//! May import: the crate root's vocabulary (`error`). Must never import
//! `faults`, `evidence`, `check` or `run`: it is the bottom layer.

mod builder;
mod clock;
mod cluster;
mod example_binary;
mod resp;
#[cfg(feature = "tls")]
mod tls;

pub use builder::ClusterBuilder;
pub use clock::{FaketimeSupport, faketime_cache_dir, faketime_support};
pub use cluster::{Cluster, Persistence, redis_server_path};
pub use example_binary::example_binary;
pub use resp::{Reply, RespConn};
#[cfg(feature = "tls")]
pub use tls::{TlsCluster, unrelated_ca_pem};
