//! Layer 5, nodes: the life of local `redis-server` processes, and nodes
//! given by URL.
//!
//! What lives here: [`Cluster`] and its table of `LocalNode`s
//! (`local.rs`: one process's start, kill, signals, data snapshot and
//! clock), its methods by concern (`acl_log.rs`: what a node's ACL log refused;
//! `builder.rs`: starting, with
//! [`ClusterBuilder`]; `external.rs`: nodes given by URL; `connect.rs`:
//! addresses and connections; `process.rs`: process faults; `commands.rs`:
//! faults sent as commands), what a server needs (`server/`: its
//! `mod.rs` the binary, command line, ports, readiness; `persistence.rs`;
//! `clock.rs`: libfaketime; `started.rs`: the process-wide list of servers
//! started and their data dirs, which [`stop_started_servers`] stops on a
//! signal), the tiny blocking RESP client the harness talks to nodes
//! with ([`RespConn`]), `TlsCluster` (feature `tls`) and [`example_binary`].
//!
//! Sharded masters (each master a local Redis Cluster, for
//! `redis-cluster://` URLs) are in `sharded/`: [`ShardedCluster`], slot
//! migration ([`Migration`]), failovers, and [`form_redis_cluster`].
//!
//! What it is for: every other layer reaches Redis through here; nothing
//! here knows about locks, fault schedules or histories.
//!
//! May import: the crate root only (`error`). Must never import `faults`,
//! `evidence`, `check` or `run`: it is the bottom layer. Inside,
//! `cluster.rs` imports neither `builder.rs` nor the files that add
//! methods to [`Cluster`]; they import it. `sharded/` imports the rest of
//! this folder, never the other way round.

mod acl_log;
mod builder;
mod cluster;
mod commands;
mod connect;
mod example_binary;
mod external;
mod local;
mod process;
mod resp;
mod server;
mod sharded;
#[cfg(feature = "tls")]
mod tls;

pub use acl_log::AclDenial;
pub use builder::ClusterBuilder;
pub use cluster::Cluster;
pub use example_binary::example_binary;
pub use resp::{Reply, RespConn};
pub use server::clock::{FaketimeSupport, faketime_cache_dir, faketime_support};
pub use server::persistence::Persistence;
pub use server::redis_server_path;
pub use server::started::stop_started_servers;
pub use sharded::{
    Migration, SLOT_COUNT, ShardPorts, ShardedCluster, form_redis_cluster, redis_cluster_args,
    redis_cluster_url, slot_of,
};
#[cfg(feature = "tls")]
pub use tls::{TlsCluster, unrelated_ca_pem};
