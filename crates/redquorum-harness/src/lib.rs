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
//! - `proxy.rs`: [`FaultProxy`] / [`Proxies`]: latency, stall, reset, refuse;
//!   one proxy per node for each client group (per-client partitions).
//! - `nemesis.rs`: [`Nemesis`], random faults one at a time; [`FaultKind`].
//! - `fault_log.rs`: [`FaultLog`], [`FaultEvent`]: what struck where and when.
//! - `history.rs`: [`History`], [`Session`], [`Holder`]: what each client did, on one clock.
//! - `history_file.rs`: [`HistoryFile`]: a run saved as JSON lines, read back to re-check.
//! - `locker.rs`: [`Locker`], [`Grant`], [`Refusal`]: the one way a workload
//!   or a benchmark drives a lock library.
//! - `workload.rs`: [`run_workload`] / [`run_workload_groups`] over a [`Locker`].
//! - `client_group.rs`: [`ClientPauser`], stop-the-world pauses of a client group.
//! - `store.rs`: [`ProtectedStore`], the counters the holders update (fenced or not).
//! - `audit.rs`: [`KeyAudit`], lock keys read on the nodes during the run; [`LockKeys`].
//! - `leaks.rs`: [`leaks_after`], lock keys left after the run.
//! - `checker.rs`: [`check`] / [`check_evidence`] → [`Verdict`] of [`Violation`]s.
//! - `exercised.rs`: [`Exercised`], what a run tested, and whether it was vacuous.
//! - `lock_delay.rs`: [`LockDelayRule`], the checker's lock-delay rule (no
//!   grant within the delay after a holder that certainly vanished).
//! - `operator.rs`: [`OperatorLog`], [`OperatorCall`]: an operator's
//!   inspections and force-releases during a run, and their promises.
//! - `resp.rs`: [`RespConn`], a tiny blocking RESP2 client for checks and faults.
//! - `error.rs`: [`HarnessError`].
//! - `example_binary.rs`: [`example_binary`], a workspace example built fresh for a test.
//! - `tls.rs` (feature `tls`, for tests): `TlsCluster`, TLS nodes with certificates generated at start.

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod audit;
mod builder;
mod cancel;
mod checker;
mod client_group;
mod clock;
mod cluster;
mod error;
mod example_binary;
mod exercised;
mod fault_kind;
mod fault_log;
mod history;
mod history_file;
mod leaks;
mod lock_delay;
mod locker;
mod micros;
mod nemesis;
mod operator;
mod proxy;
mod resp;
mod revival;
mod share;
mod store;
#[cfg(feature = "tls")]
mod tls;
mod workload;

pub use audit::{AuditConfig, KeyAudit, KeyLife, LockKeys};
pub use builder::ClusterBuilder;
pub use checker::{Evidence, LeakedKey, Verdict, Violation, check, check_evidence};
pub use client_group::ClientPauser;
pub use clock::{FaketimeSupport, faketime_cache_dir, faketime_support};
pub use cluster::{Cluster, Persistence, redis_server_path};
pub use error::HarnessError;
pub use example_binary::example_binary;
pub use exercised::Exercised;
pub use fault_kind::FaultKind;
pub use fault_log::{FaultEvent, FaultLog};
pub use history::{Dropped, Extension, History, Holder, Outcome, Session};
pub use history_file::{HistoryFile, RunInfo};
pub use leaks::{find_leaks, leaks_after, lock_keys_after};
pub use lock_delay::{LockDelayRule, vanished_holders};
pub use locker::{Grant, Locker, Refusal};
pub use nemesis::{Nemesis, NemesisConfig};
pub use operator::{
    OperatorAction, OperatorCall, OperatorFault, OperatorLog, inspections_naming_holders,
    ousted_holders,
};
pub use proxy::{FaultProxy, NodeProxies, Proxies, ProxyMode};
pub use resp::{Reply, RespConn};
pub use share::Share;
pub use store::ProtectedStore;
#[cfg(feature = "tls")]
pub use tls::{TlsCluster, unrelated_ca_pem};
pub use workload::{WorkloadConfig, run_workload, run_workload_groups, run_workload_into};
