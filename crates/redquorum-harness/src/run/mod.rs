//! Layer 1, run: driving a lock library under test, and keeping the run.
//!
//! What lives here: the [`Locker`] trait (`locker.rs`: the one way
//! anything drives a lock), the workload runner ([`run_workload`],
//! [`run_workload_groups`] in `workload.rs`; [`WorkloadConfig`]; its
//! clients in `clients/`: one client's loop, a hold the lock keeps alive
//! itself, random future drops, a hold handed over to racing adopters)
//! with its [`ProtectedStore`], the
//! [`HistoryFile`] a run is saved as and re-checked from, and the torture
//! run composed from every layer below ([`TorturePlan`] in `plan.rs`, run
//! by `torture.rs` around the caller's [`TortureLock`] (`torture_lock.rs`)
//! and [`TortureOperator`] (`operator/`: its pace, [`OperatorPace`] in
//! `operator_pace.rs`, and which lock looks stuck) to a [`TortureRun`] (`torture_run.rs`), on the masters
//! `masters.rs` starts: single servers or local Redis Clusters).
//!
//! What it is for: composing the layers below into runs; it is the top
//! layer, and the only one that knows a lock library exists (through
//! [`Locker`] and [`TortureLock`], never by name: this crate does not
//! depend on the library, which dev-depends on it for its doc tests).
//!
//! May import: every layer below (`nodes`, `faults`, `evidence`, `check`)
//! and the crate root. Nothing in the crate imports it but `lib.rs`.
//! Inside, `clients/` imports the [`Locker`], the store and the
//! workload's settings, `operator/` the pace (`operator_pace.rs`); neither imports what
//! starts it (`workload.rs`, `torture.rs`).

mod clients;
mod grant;
mod history_file;
mod locker;
mod masters;
mod operator;
mod operator_pace;
mod plan;
mod store;
mod torture;
mod torture_lock;
mod torture_run;
mod workload;
mod workload_config;

pub use clients::note_attempt;
pub use grant::Grant;
pub use history_file::{HistoryFile, RunInfo};
pub use locker::{Asked, HandOver, Locker, Refusal};
pub use operator::{ASK_WAIT, Inspected, NoOperator, TortureOperator};
pub use operator_pace::OperatorPace;
pub use plan::TorturePlan;
pub use store::ProtectedStore;
pub use torture_lock::TortureLock;
pub use torture_run::{TortureRun, TortureStopped, void_by_host_clock};
pub use workload::{run_workload, run_workload_groups, run_workload_into};
pub use workload_config::WorkloadConfig;
