//! [`OwnCalls`]: redquorum's own count of the calls it sent to the nodes
//! (its `redquorum_node_calls_total` metric), for the requests per cycle.
//!
//! The servers' `INFO commandstats` counts a script's inner commands as
//! their own, so once the default acquire went out as a native `SET`, the
//! `SET` inside a batched call of the lock script was counted as a second
//! request. This recorder keeps only that one counter; every other metric
//! of the library is a no-op, as without a recorder.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

/// The counter redquorum increments for each call it sends.
const NODE_CALLS: &str = "redquorum_node_calls_total";

/// The calls redquorum sent in this process, over every command and node.
///
/// # Examples
///
/// ```
/// let calls = redquorum_benches::OwnCalls::install();
/// assert_eq!(calls.map(|c| c.total()).unwrap_or(0), 0);
/// ```
#[derive(Debug, Clone)]
pub struct OwnCalls(Arc<AtomicU64>);

impl OwnCalls {
    /// Installs the process's metrics recorder (before any `Redlock` is
    /// built); `None` when one was installed already.
    #[must_use]
    pub fn install() -> Option<Self> {
        let calls = Self(Arc::default());
        metrics::set_global_recorder(calls.clone()).ok()?;
        Some(calls)
    }

    /// Calls sent so far.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Recorder for OwnCalls {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        if key.name() == NODE_CALLS {
            Counter::from_arc(Arc::clone(&self.0))
        } else {
            Counter::noop()
        }
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}
