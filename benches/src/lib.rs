//! Side-by-side benchmarks for redquorum: the workloads, their statistics,
//! and the floor they are compared with.
//!
//! The `side_by_side` bench target (`cargo bench -p redquorum-benches`)
//! starts its own nodes and runs the floor, redquorum and the `rslock` crate
//! on them in one run; `redquorum bench` runs the same workloads against the
//! user's nodes through this library. The `torture_peer` example runs
//! `redquorum torture`'s default run around the `rslock` crate or
//! redquorum's plain lock, one fault kind at a time (docs/torture.md).
//!
//! # Layout
//!
//! - `workload.rs`: [`Workload`] (A sequential, B parallel, C contended, C2
//!   ping-pong), [`run`], [`Sample`], [`Report`] (the JSON figures).
//! - `locker.rs`: [`Floor`] (the same script through fred, no lock logic),
//!   behind the harness's [`Locker`] trait (re-exported here). redquorum
//!   itself is driven through its adapter, the `redquorum-adapter` crate.
//! - `redis_stats.rs`: [`CommandStats`] (requests from `INFO commandstats`);
//!   `own_calls.rs`: [`OwnCalls`] (the calls redquorum counts itself:
//!   the servers count a script's inner `SET` as a request too).
//! - `fairness.rs`: [`Fairness`] (how a contended run's critical
//!   sections were shared among its clients).
//! - `cpu.rs`: [`process_cpu`] (`getrusage`); `stats.rs`: [`Latencies`]
//!   (an HDR histogram), [`median`].

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod cpu;
mod fairness;
mod locker;
mod own_calls;
mod redis_stats;
mod stats;
mod workload;

pub use cpu::process_cpu;
pub use fairness::Fairness;
pub use locker::Floor;
pub use own_calls::OwnCalls;
pub use redis_stats::CommandStats;
pub use redquorum_harness::{Grant, Locker, Refusal};
pub use stats::{Latencies, median};
pub use workload::{Report, Sample, Workload, round3, run};
