//! Layer 1, run: driving a lock library under test, and keeping the run.
//!
//! What lives here: the [`Locker`] trait (`locker.rs`: the one way
//! anything drives a lock), the workload runner ([`run_workload`],
//! [`run_workload_groups`] in `workload.rs`; [`WorkloadConfig`]; one
//! client's loop in `client.rs`, a hold the lock keeps alive itself in
//! `kept.rs`; random future drops in `cancel.rs`) with
//! its [`ProtectedStore`], the [`HistoryFile`] a run is saved as and
//! re-checked from, and the torture run composed from every layer below
//! ([`TorturePlan`] in `plan.rs`, run by `torture.rs` around the caller's
//! [`TortureLock`] and [`TortureOperator`] (`torture_lock.rs`,
//! `operate.rs`) to a [`TortureRun`] (`torture_run.rs`), on the masters
//! `masters.rs` starts: single servers or local Redis Clusters).
//!
//! What it is for: composing the layers below into runs; it is the top
//! layer, and the only one that knows a lock library exists (through
//! [`Locker`] and [`TortureLock`], never by name: this crate does not
//! depend on the library, which dev-depends on it for its doc tests).
//!
//! May import: every layer below (`nodes`, `faults`, `evidence`, `check`)
//! and the crate root. Nothing in the crate imports it but `lib.rs`.

mod cancel;
mod client;
mod history_file;
mod kept;
mod locker;
mod masters;
mod operate;
mod plan;
mod store;
mod stuck;
mod torture;
mod torture_lock;
mod torture_run;
mod workload;
mod workload_config;

pub use history_file::{HistoryFile, RunInfo};
pub use locker::{Grant, Locker, Refusal};
pub use operate::{NoOperator, TortureOperator};
pub use plan::{OperatorPace, TorturePlan};
pub use store::ProtectedStore;
pub use torture_lock::TortureLock;
pub use torture_run::{TortureRun, TortureStopped};
pub use workload::{run_workload, run_workload_groups, run_workload_into};
pub use workload_config::WorkloadConfig;
