//! Real local `redis-server` nodes for testing redquorum, and fault injection.
//!
//! No mocks: [`Cluster::start`] launches N `redis-server` processes on free
//! loopback ports, each with its own temporary directory, and kills them when
//! dropped (also when a test panics). It hands out plain `redis://` URLs, so
//! the library can use it in doc tests without sharing types.
//!
//! [`Cluster::from_env_or_start`] uses the nodes named in `REDQUORUM_NODES`
//! instead, when set (for example the `docker/` compose nodes); process
//! faults are then refused with [`HarnessError::External`].
//!
//! # Layout
//!
//! - `cluster.rs`: [`Cluster`], node lifecycle (start, kill, restart, pause).
//! - `resp.rs`: [`RespConn`], a tiny blocking RESP2 client for checks and faults.
//! - `error.rs`: [`HarnessError`].
//! - `tls.rs`: [`TlsCluster`], TLS nodes with certificates generated at start.

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod cluster;
mod error;
mod resp;
mod tls;

pub use cluster::{Cluster, Persistence, redis_server_path};
pub use error::HarnessError;
pub use resp::{Reply, RespConn};
pub use tls::{TlsCluster, unrelated_ca_pem};
