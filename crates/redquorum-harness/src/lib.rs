//! Real local `redis-server` nodes for testing redquorum, fault injection, a
//! workload runner and a history checker.
//!
//! No mocks: [`Cluster::start`] launches N `redis-server` processes on free
//! loopback ports, each with its own temporary directory, and kills them when
//! dropped (also when a test panics). It hands out plain `redis://` URLs, so
//! the library can use it in doc tests without sharing types. A signal
//! skips that drop: a process ending on one calls [`stop_started_servers`]
//! (the `redquorum` CLI does on SIGINT and SIGTERM).
//!
//! [`Cluster::from_env_or_start`] uses the nodes named in `REDQUORUM_NODES`
//! instead, when set (for example the `docker/` compose nodes); process
//! faults are then refused with [`HarnessError::External`], while the
//! network faults of a [`FaultProxy`] and the TTL-shift clock jump still work.
//!
//! A whole torture run is one call: [`TorturePlan::execute`] composes the
//! nodes (single servers behind fault proxies, or cluster masters), the
//! key audit, the nemesis, the workload in client groups, the leak wait
//! and the checker around a lock the caller builds ([`TortureLock`]); this
//! crate never names the lock library.
//!
//! # Layout: five layers
//!
//! Each folder is a layer, numbered top to bottom as in the library's crate
//! doc; a layer imports only the layers below it in this list (and the
//! root's `error.rs`, `micros.rs` and `lag_meter.rs`), never one above, so
//! no two folders import each other, and no two files import each other
//! either. Each folder's `mod.rs` says what lives there and re-exports its
//! public items, which this file re-exports again: every public path is
//! `redquorum_harness::Item`. `tests/tests/layers` checks these rules
//! against the imports (its `layers.txt` holds them as a table).
//!
//! 1. `run/`: driving a lock and keeping the run: [`Locker`], the workload
//!    ([`run_workload_groups`]; its clients in `clients/`), the
//!    [`ProtectedStore`], the [`HistoryFile`], and the torture run
//!    ([`TorturePlan`], [`TortureLock`], [`TortureRun`]; its operator in
//!    `operator/`).
//! 2. `check/`: pure judgement of the evidence: [`check`] /
//!    [`check_evidence`] → [`Verdict`] of [`Violation`]s, each rule in
//!    its own file (the rules on what the nodes held, from the key audit,
//!    in `audit/`), and [`Exercised`] (was the run vacuous?).
//! 3. `evidence/`: what a run records: the [`History`] of [`Session`]s,
//!    the [`KeyAudit`], the leak check ([`leaks_after`]), the
//!    [`OperatorLog`], the [`Share`] a hold declares.
//! 4. `faults/`: what goes wrong on purpose: [`FaultKind`], the
//!    [`FaultProxy`] and per-group [`Proxies`] (`net/`), [`ClientPauser`],
//!    the [`Nemesis`] (`nemesis/`; on a [`ShardedCluster`] too: slot
//!    migrations and failovers) and its [`FaultLog`].
//! 5. `nodes/`: local `redis-server` processes and nodes given by URL:
//!    [`Cluster`] (its `LocalNode`s start, die, pause, roll back, and move
//!    their clocks), [`ClusterBuilder`], [`ShardedCluster`] (each master a
//!    local Redis Cluster: slot migration, failover), libfaketime
//!    ([`faketime_support`]), [`RespConn`], [`example_binary`], and
//!    `TlsCluster` (feature `tls`, for tests).
//!
//! At the root: `error.rs` ([`HarnessError`]) and `micros.rs` (times as
//! microseconds in JSON), which every layer may use.

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod check;
mod error;
mod evidence;
mod faults;
mod lag_meter;
mod micros;
pub use lag_meter::{LAG_RECORDED, LAG_TICK};
mod nodes;
mod run;

pub use check::{
    CounterShown, Evidence, Exercised, HandOvers, LockDelayRule, NodeBacking, OperatorFault,
    Verdict, Violation, check, check_evidence, inspections_naming_holders, kept_holders_asked,
    kept_holders_ousted, ousted_holders, vanished_holders,
};
pub use error::HarnessError;
pub use evidence::{
    AuditConfig, AuditNudge, AuditRead, AuditRound, Backing, CounterTrack, Dropped, Extension,
    History, HoldTrack, Holder, HostClockStep, KeptHold, KeptHolds, KeyAudit, KeyLife, LeakedKey,
    LockKeys, OperatorAction, OperatorCall, OperatorLog, Outcome, RuntimeLag, SAME_EXPIRY,
    STEP_RECORDED, Seen, Session, Share, find_leaks, leaks_after, lock_keys_after,
};
pub use faults::{
    ClientPauser, FaultEvent, FaultKind, FaultLog, FaultProxy, Nemesis, NemesisConfig, NodeProxies,
    Proxies, ProxyMode, ScriptCounts,
};
pub use nodes::{
    AclDenial, Cluster, ClusterBuilder, FaketimeSupport, Migration, Persistence, Reply, RespConn,
    SLOT_COUNT, ShardPorts, ShardedCluster, example_binary, faketime_cache_dir, faketime_support,
    form_redis_cluster, redis_cluster_args, redis_cluster_url, redis_server_path, slot_of,
    stop_started_servers,
};
#[cfg(feature = "tls")]
pub use nodes::{TlsCluster, unrelated_ca_pem};
pub use run::{
    ASK_WAIT, Asked, Grant, HandOver, HistoryFile, Inspected, Locker, NoOperator, OperatorPace,
    ProtectedStore, Refusal, RunInfo, TortureLock, TortureOperator, TorturePlan, TortureRun,
    TortureStopped, WorkloadConfig, note_attempt, run_workload, run_workload_groups,
    run_workload_into, void_by_host_clock,
};
