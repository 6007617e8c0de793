//! The workload runner: K clients × M resources, each critical section a
//! read-modify-write of a protected counter kept in a separate Redis (so an
//! overlap loses an update, and the checker names it), recorded into a
//! [`History`]. Holders come in a mix of kinds ([`Holder`](crate::Holder)): brief ones,
//! ones that use the lease until just before its deadline, and ones that
//! pause past it (a GC pause) and then extend or write anyway.
//!
//! Clients run on the caller's runtime ([`run_workload`]), or in groups,
//! each group on a runtime and thread of its own with its own lock client
//! ([`run_workload_groups`]): a group can then be paused as a whole, as a
//! stop-the-world pause freezes a client process.
//!
//! The runner is generic over [`Locker`] (`locker.rs`), so that this crate
//! does not depend on the lock library (which dev-depends on this crate for
//! its doc tests).
//!
//! Its configuration is [`WorkloadConfig`] (`workload_config.rs`); one
//! client's loop is in `client.rs`.

use std::sync::Arc;
use std::time::Instant;

use super::clients::Client;
use super::locker::Locker;
use super::store::ProtectedStore;
use super::workload_config::WorkloadConfig;
use crate::evidence::{History, RuntimeLag};
use crate::faults::{ClientPauser, serve_pauses};
use crate::lag_meter;

/// Runs the workload to its end and returns the history.
///
/// # Cancel safety
///
/// Not cancel safe: dropping it abandons sessions mid-way (their keys expire).
///
/// # Examples
///
/// ```
/// # use std::time::{Duration, Instant};
/// # use redquorum_harness::{Grant, Locker};
/// # struct Local;
/// # impl Locker for Local {
/// #     type Held = ();
/// #     async fn acquire(&self, _r: &str) -> Result<Grant<()>, redquorum_harness::Refusal> {
/// #         Ok(Grant::new((), "me".into(), Instant::now() + Duration::from_secs(60)))
/// #     }
/// #     async fn release(&self, _held: ()) -> Result<(), String> { Ok(()) }
/// # }
/// # #[tokio::main] async fn main() {
/// let node = redquorum_harness::Cluster::start(1).unwrap();
/// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
/// let config = redquorum_harness::WorkloadConfig {
///     clients: 1, duration: Duration::from_millis(100), ..Default::default()
/// };
/// let history = redquorum_harness::run_workload(std::sync::Arc::new(Local), store, &config).await;
/// assert!(!history.sessions().is_empty());
/// # }
/// ```
pub async fn run_workload<L: Locker>(
    locker: Arc<L>,
    store: ProtectedStore,
    config: &WorkloadConfig,
) -> History {
    run_workload_into(History::new(), locker, store, config).await
}

/// As [`run_workload`], recording into `history`, which the caller can
/// watch while the run goes on (progress lines).
///
/// # Cancel safety
///
/// Not cancel safe: dropping it abandons sessions mid-way (their keys expire).
///
/// # Examples
///
/// See [`run_workload`]; `history.len()` grows while it runs.
pub async fn run_workload_into<L: Locker>(
    history: History,
    locker: Arc<L>,
    store: ProtectedStore,
    config: &WorkloadConfig,
) -> History {
    let until = Instant::now() + config.duration;
    let tasks: Vec<_> = (0..config.clients)
        .map(|client| {
            let run = Client::new(client, 0, &locker, &store, &history, config, until);
            tokio::spawn(run.run())
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    history
}

/// Runs the workload in `groups` client groups, each on a thread and
/// runtime of its own with its own lock client from `make(group)` (built on
/// that runtime), client `c` in group `c % groups`. `pauser` can then stop
/// a group's runtime as a whole (see [`ClientPauser`]).
///
/// # Cancel safety
///
/// Not cancel safe: dropping it leaves the groups running to their end.
///
/// # Examples
///
/// ```
/// # use std::time::{Duration, Instant};
/// # use redquorum_harness::{ClientPauser, Grant, History, Locker};
/// # struct Local;
/// # impl Locker for Local {
/// #     type Held = ();
/// #     async fn acquire(&self, _r: &str) -> Result<Grant<()>, redquorum_harness::Refusal> {
/// #         Ok(Grant::new((), "me".into(), Instant::now() + Duration::from_secs(60)))
/// #     }
/// #     async fn release(&self, _held: ()) -> Result<(), String> { Ok(()) }
/// # }
/// # #[tokio::main] async fn main() {
/// let node = redquorum_harness::Cluster::start(1).unwrap();
/// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
/// let config = redquorum_harness::WorkloadConfig {
///     clients: 2, duration: Duration::from_millis(100), ..Default::default()
/// };
/// let pauser = ClientPauser::default();
/// let history = redquorum_harness::run_workload_groups(History::new(), 2, |_| Local, store, &config, &pauser).await;
/// assert!(history.sessions().iter().any(|s| s.group == 1));
/// # }
/// ```
pub async fn run_workload_groups<L, F>(
    history: History,
    groups: usize,
    make: F,
    store: ProtectedStore,
    config: &WorkloadConfig,
    pauser: &ClientPauser,
) -> History
where
    L: Locker,
    F: Fn(usize) -> L + Send + Sync + 'static,
{
    let groups = groups.max(1);
    let until = Instant::now() + config.duration;
    let make = Arc::new(make);
    let threads: Vec<_> = (0..groups)
        .filter_map(|group| {
            let (make, store, history, config) =
                (make.clone(), store.clone(), history.clone(), config.clone());
            let pauses = pauser.register(group);
            std::thread::Builder::new()
                .name(format!("client-group-{group}"))
                .spawn(move || {
                    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    else {
                        return;
                    };
                    runtime.block_on(async move {
                        serve_pauses(pauses);
                        tokio::spawn(meter_lag(group, history.clone(), until));
                        let locker = Arc::new(make(group));
                        let tasks: Vec<_> = (group..config.clients)
                            .step_by(groups)
                            .map(|client| {
                                let run = Client::new(
                                    client, group, &locker, &store, &history, &config, until,
                                );
                                tokio::spawn(run.run())
                            })
                            .collect();
                        for task in tasks {
                            let _ = task.await;
                        }
                        // The runtime stops next, cutting what the library
                        // still finishes in the background (Locker::close).
                        locker.close().await;
                    });
                })
                .ok()
        })
        .collect();
    let _ = tokio::task::spawn_blocking(move || {
        for thread in threads {
            let _ = thread.join();
        }
    })
    .await;
    pauser.clear();
    history
}

/// Records every time this runtime woke more than [`LAG_RECORDED`](crate::LAG_RECORDED) late
/// from a [`LAG_TICK`](crate::LAG_TICK) sleep, until `until` (lag_meter.rs).
async fn meter_lag(group: usize, history: History, until: Instant) {
    let epoch = history.epoch();
    lag_meter::meter(Some(until), |woke, late| {
        let at = woke.saturating_duration_since(epoch);
        history.note_lag(RuntimeLag {
            group,
            node: None,
            at,
            late,
        });
    })
    .await;
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_runtime_held_up_is_recorded_late_by_about_as_long() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let history = History::new();
        let until = Instant::now() + Duration::from_millis(400);
        runtime.block_on(async {
            let meter = tokio::spawn(meter_lag(3, history.clone(), until));
            tokio::time::sleep(Duration::from_millis(60)).await;
            // Blocks the group's one thread, as a CPU-bound task would.
            std::thread::sleep(Duration::from_millis(200));
            meter.await.unwrap();
        });
        let lags = history.lags();
        assert!(
            lags.iter()
                .any(|lag| lag.group == 3 && lag.late >= Duration::from_millis(150)),
            "{lags:?}"
        );
    }
}
