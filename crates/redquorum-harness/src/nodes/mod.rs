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
mod commands;
mod connect;
mod example_binary;
mod external;
mod local;
mod persistence;
mod process;
mod resp;
mod server;
#[cfg(feature = "tls")]
mod tls;

pub use builder::ClusterBuilder;
pub use clock::{FaketimeSupport, faketime_cache_dir, faketime_support};
pub use cluster::Cluster;
pub use example_binary::example_binary;
pub use persistence::Persistence;
pub use resp::{Reply, RespConn};
pub use server::redis_server_path;
#[cfg(feature = "tls")]
pub use tls::{TlsCluster, unrelated_ca_pem};
