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

mod check;
mod error;
mod evidence;
mod faults;
mod micros;
mod nodes;
mod run;

pub use check::{
    Evidence, Exercised, LockDelayRule, OperatorFault, Verdict, Violation, check, check_evidence,
    inspections_naming_holders, ousted_holders, vanished_holders,
};
pub use error::HarnessError;
pub use evidence::{
    AuditConfig, Dropped, Extension, History, Holder, KeyAudit, KeyLife, LeakedKey, LockKeys,
    OperatorAction, OperatorCall, OperatorLog, Outcome, Session, Share, find_leaks, leaks_after,
    lock_keys_after,
};
pub use faults::{
    ClientPauser, FaultEvent, FaultKind, FaultLog, FaultProxy, Nemesis, NemesisConfig, NodeProxies,
    Proxies, ProxyMode,
};
pub use nodes::{
    Cluster, ClusterBuilder, FaketimeSupport, Persistence, Reply, RespConn, example_binary,
    faketime_cache_dir, faketime_support, redis_server_path,
};
#[cfg(feature = "tls")]
pub use nodes::{TlsCluster, unrelated_ca_pem};
pub use run::{
    Grant, HistoryFile, Locker, NoOperator, OperatorPace, ProtectedStore, Refusal, RunInfo,
    TortureLock, TortureOperator, TorturePlan, TortureRun, TortureStopped, WorkloadConfig,
    run_workload, run_workload_groups, run_workload_into,
};
