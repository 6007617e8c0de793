//! Layer 1, nodes: the life of local `redis-server` processes, and nodes
//! given by URL.
//!
//! What lives here: [`Cluster`] and its table of `LocalNode`s
//! (`local.rs`: one process's start, kill, signals, data snapshot and
//! clock), its methods by concern (`builder.rs`: starting, with
//! [`ClusterBuilder`]; `external.rs`: nodes given by URL; `connect.rs`:
//! addresses and connections; `process.rs`: process faults; `commands.rs`:
//! faults sent as commands), what a server needs (`server.rs`: binary,
//! command line, ports, readiness; `persistence.rs`; `clock.rs`:
//! libfaketime), the tiny blocking RESP client the harness talks to nodes
//! with ([`RespConn`]), `TlsCluster` (feature `tls`) and [`example_binary`].
//!
//! Sharded masters (each master a local Redis Cluster, for
//! `redis-cluster://` URLs): [`ShardedCluster`] (`sharded.rs`: starting
//! and where everything is), its methods by concern (`routing.rs`: a key's
//! primary, commands by key, keys; `migrate.rs`: moving a slot, whole or
//! mid-way with [`Migration`]; `failover.rs`: promoting a replica, also one
//! that lags), and what they stand on: `slots.rs` (the 16384 slots,
//! [`slot_of`]), `form.rs` (making a cluster of running nodes by port, also
//! for the CLI: [`form_redis_cluster`]) and `settle.rs` (the bounded waits
//! until every node agrees).
//!
//! What it is for: every other layer reaches Redis through here; nothing
//! here knows about locks, fault schedules or histories.
//!
//! May import: the crate root only (`error`). Must never import `faults`,
//! `evidence`, `check` or `run`: it is the bottom layer. Inside,
//! `cluster.rs` imports neither `builder.rs` nor the files that add
//! methods to [`Cluster`]; they import it. Likewise `sharded.rs` imports
//! none of the files that add methods to [`ShardedCluster`].

mod builder;
mod clock;
mod cluster;
mod commands;
mod connect;
mod example_binary;
mod external;
mod failover;
mod form;
mod local;
mod migrate;
mod persistence;
mod process;
mod resp;
mod routing;
mod server;
mod settle;
mod sharded;
mod slots;
#[cfg(feature = "tls")]
mod tls;

pub use builder::ClusterBuilder;
pub use clock::{FaketimeSupport, faketime_cache_dir, faketime_support};
pub use cluster::Cluster;
pub use example_binary::example_binary;
pub use form::{ShardPorts, form_redis_cluster, redis_cluster_args, redis_cluster_url};
pub use migrate::Migration;
pub use persistence::Persistence;
pub use resp::{Reply, RespConn};
pub use server::redis_server_path;
pub use sharded::ShardedCluster;
pub use slots::{SLOT_COUNT, slot_of};
#[cfg(feature = "tls")]
pub use tls::{TlsCluster, unrelated_ca_pem};
