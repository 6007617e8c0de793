//! Real local `redis-server` nodes for testing redquorum, fault injection, a
//! workload runner and a history checker.
//!
//! No mocks: [`Cluster::start`] launches N `redis-server` processes on free
//! loopback ports, each with its own temporary directory, and kills them when
//! dropped (also when a test panics). It hands out plain `redis://` URLs, so
//! the library can use it in doc tests without sharing types.
//!
//! [`Cluster::from_env_or_start`] uses the nodes named in `REDQUORUM_NODES`
//! instead, when set (for example the `docker/` compose nodes); process
//! faults are then refused with [`HarnessError::External`], while the
//! network faults of a [`FaultProxy`] and the TTL-shift clock jump still work.
//!
//! # Layout
//!
//! - `cluster.rs`: [`Cluster`], node lifecycle (start, kill, restart, pause,
//!   DEBUG SLEEP, CLIENT PAUSE, data-dir rollback, clock jump).
//! - `builder.rs`: [`ClusterBuilder`], per-node settings (fast clocks).
//! - `clock.rs`: libfaketime discovery ([`faketime_support`]) and the TTL-shift script.
//! - `proxy.rs`: [`FaultProxy`] / [`Proxies`]: latency, stall, reset, refuse.
//! - `nemesis.rs`: [`Nemesis`], random faults one at a time.
//! - `history.rs`: [`History`], [`Session`]: what each client did, on one clock.
//! - `locker.rs`: [`Locker`], [`Grant`], [`Refusal`]: the one way a workload
//!   or a benchmark drives a lock library.
//! - `workload.rs`: [`run_workload`] over a [`Locker`], the [`ProtectedStore`].
//! - `checker.rs`: [`check`] → [`Verdict`] of [`Violation`]s.
//! - `resp.rs`: [`RespConn`], a tiny blocking RESP2 client for checks and faults.
//! - `error.rs`: [`HarnessError`].
//! - `tls.rs`: [`TlsCluster`], TLS nodes with certificates generated at start.

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod builder;
mod checker;
mod clock;
mod cluster;
mod error;
mod history;
mod locker;
mod nemesis;
mod proxy;
mod resp;
mod tls;
mod workload;

pub use builder::ClusterBuilder;
pub use checker::{LeakedKey, Verdict, Violation, check};
pub use clock::{FaketimeSupport, faketime_cache_dir, faketime_support};
pub use cluster::{Cluster, Persistence, redis_server_path};
pub use error::HarnessError;
pub use history::{History, Outcome, Session};
pub use locker::{Grant, Locker, Refusal};
pub use nemesis::{FaultKind, FaultLog, Nemesis, NemesisConfig};
pub use proxy::{FaultProxy, Proxies, ProxyMode};
pub use resp::{Reply, RespConn};
pub use tls::{TlsCluster, unrelated_ca_pem};
pub use workload::{
    ProtectedStore, WorkloadConfig, find_leaks, leaks_after, run_workload, run_workload_into,
};
