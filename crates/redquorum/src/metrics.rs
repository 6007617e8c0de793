//! Metrics through the `metrics` facade: names, labels, descriptions, and
//! the calls that record them.
//!
//! Nothing is recorded unless the application installs a recorder (for
//! example a Prometheus exporter); without one every call is a no-op.
//! The names are part of the public contract, listed in `docs/observability.md`:
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `redquorum_acquire_total` | counter | `kind`, `result` = `acquired`, `contended`, `unavailable`, `expired` | one per acquisition attempt |
//! | `redquorum_acquire_seconds` | histogram | `kind`, `result` | time from the first send to the decision |
//! | `redquorum_acquire_wait_seconds` | histogram | `result` = `acquired`, `timeout`, `failed`, `cancelled` | a blocking acquire (`lock()` and kin) from its call to its end, retries included |
//! | `redquorum_waiting_locks` | gauge | | blocking acquires in progress |
//! | `redquorum_extend_total` | counter | `kind`, `result` = `extended`, `not_held`, `unavailable`, `expired` | one per extension |
//! | `redquorum_lease_lost_total` | counter | | extensions that found the lease gone (`not_held` or `expired`) |
//! | `redquorum_held_locks` | gauge | `kind` | holds granted and not yet released, forgotten or dropped |
//! | `redquorum_hold_seconds` | histogram | `kind` | how long a hold lasted, from its grant to its release, forget or drop |
//! | `redquorum_release_validity_seconds` | histogram | | validity left when `Lock::release` was called (0 when already expired) |
//! | `redquorum_release_total` | counter | `kind`, `result` = `released`, `not_held`, `unavailable` | one per release |
//! | `redquorum_vote_refused_total` | counter | `node`, `reason` = `replica`, `recent_restart`, `unverified`, `unknown_uptime`, `same_server` | votes not counted (health rules) |
//! | `redquorum_node_eligible` | gauge | `node` | 1 when the node's votes count, 0 when refused, after each probe |
//! | `redquorum_node_calls_total` | counter | `command` = `evalsha`, `eval`, `set` | calls of the lock's operations sent to the nodes (a batch is one call; `set`: the default acquire alone on a single server) |
//!
//! `kind` is the lock kind: `lock`, `write`, `read` or `reentrant`.
//! Histograms are in seconds; their buckets are the exporter's choice
//! (`docs/observability.md` suggests some).

use std::time::{Duration, Instant};

use metrics::Unit;

use crate::error::Error;
use crate::health::ineligible::Ineligible;
use crate::node_id::NodeId;

/// Acquisitions, by result.
pub(crate) const ACQUIRE_TOTAL: &str = "redquorum_acquire_total";
/// Acquisition latency, by result.
pub(crate) const ACQUIRE_SECONDS: &str = "redquorum_acquire_seconds";
/// Extensions, by result.
pub(crate) const EXTEND_TOTAL: &str = "redquorum_extend_total";
/// Leases found lost by an extension.
pub(crate) const LEASE_LOST_TOTAL: &str = "redquorum_lease_lost_total";
/// Validity left when a lock is released.
pub(crate) const RELEASE_VALIDITY_SECONDS: &str = "redquorum_release_validity_seconds";
/// Releases, by result.
pub(crate) const RELEASE_TOTAL: &str = "redquorum_release_total";
/// Votes refused by the health rules, by node and reason.
pub(crate) const VOTE_REFUSED_TOTAL: &str = "redquorum_vote_refused_total";
/// Whether a node's votes count (1) or not (0).
pub(crate) const NODE_ELIGIBLE: &str = "redquorum_node_eligible";
/// Gauge: whether a node is up (node/link.rs).
pub(crate) const NODE_UP: &str = "redquorum_node_up";
/// Counter: clock faults a node's probes saw (jumps, stops, fast or slow).
pub(crate) const NODE_CLOCK_FAULTS: &str = "redquorum_node_clock_faults_total";
/// A blocking acquire's whole wait, by result.
pub(crate) const ACQUIRE_WAIT_SECONDS: &str = "redquorum_acquire_wait_seconds";
/// Blocking acquires in progress.
pub(crate) const WAITING_LOCKS: &str = "redquorum_waiting_locks";
/// Holds granted and not yet ended, by kind.
pub(crate) const HELD_LOCKS: &str = "redquorum_held_locks";
/// How long holds lasted, by kind.
pub(crate) const HOLD_SECONDS: &str = "redquorum_hold_seconds";
/// Calls sent to the nodes, by command.
pub(crate) const NODE_CALLS_TOTAL: &str = "redquorum_node_calls_total";

/// Registers every metric's description and unit with the installed
/// recorder (exporters show them as `# HELP` lines). Called by each
/// `RedlockBuilder::build`, so a recorder installed before the first
/// `Redlock` is built gets them; describing twice is harmless.
pub(crate) fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        ACQUIRE_TOTAL,
        Unit::Count,
        "Lock acquisition attempts (each retry of lock() counts), by kind and result"
    );
    describe_histogram!(
        ACQUIRE_SECONDS,
        Unit::Seconds,
        "Time of one acquisition attempt, from the first send to the quorum decision"
    );
    describe_histogram!(
        ACQUIRE_WAIT_SECONDS,
        Unit::Seconds,
        "Time a blocking acquire (lock()) took from its call to its end, retries included, by result"
    );
    describe_gauge!(
        WAITING_LOCKS,
        Unit::Count,
        "Blocking acquires (lock()) in progress in this process"
    );
    describe_counter!(
        EXTEND_TOTAL,
        Unit::Count,
        "Lease extensions, by kind and result"
    );
    describe_counter!(
        LEASE_LOST_TOTAL,
        Unit::Count,
        "Extensions that found the lease gone (not held or expired)"
    );
    describe_gauge!(
        HELD_LOCKS,
        Unit::Count,
        "Locks this process holds now (granted, not yet released, forgotten or dropped), by kind"
    );
    describe_histogram!(
        HOLD_SECONDS,
        Unit::Seconds,
        "How long a lock was held, from its grant to its release, forget or drop, by kind"
    );
    describe_histogram!(
        RELEASE_VALIDITY_SECONDS,
        Unit::Seconds,
        "Validity a lock had left when its holder released it (0 when already expired)"
    );
    describe_counter!(RELEASE_TOTAL, Unit::Count, "Releases, by kind and result");
    describe_counter!(
        VOTE_REFUSED_TOTAL,
        Unit::Count,
        "Node votes not counted by the health rules (replica, recent restart, ...), by node and reason"
    );
    describe_counter!(
        NODE_CLOCK_FAULTS,
        Unit::Count,
        "Clock faults the health probes saw on a node (a jump, a stop, a clock fast or slow beyond the drift factor), by node"
    );
    describe_gauge!(
        NODE_UP,
        "0 while the node is down (its connection failed, or it left a call unanswered for the node timeout) and operations skip it; 1 once it answers again"
    );
    describe_counter!(
        NODE_CALLS_TOTAL,
        Unit::Count,
        "Calls of the lock's operations sent to the nodes (a batch of operations is one call), by command: evalsha, eval, set"
    );
    describe_gauge!(
        NODE_ELIGIBLE,
        "1 when the node's votes count, 0 when the health rules refuse them; set after each probe"
    );
}

/// A call of `command` sent to a node (node/batch/batcher_call.rs).
pub(crate) fn node_call(command: &'static str) {
    metrics::counter!(NODE_CALLS_TOTAL, "command" => command).increment(1);
}

/// The `result` label of an acquire, extend or release, in its metrics and
/// its span alike: `ok` when it succeeded, else the error's
/// [`label`](Error::label) (`contended`, `unavailable`, `expired`,
/// `not_held`: the only errors a settled operation returns).
pub(crate) fn result_label(result: Result<(), &Error>, ok: &'static str) -> &'static str {
    match result {
        Ok(()) => ok,
        Err(error) => error.label(),
    }
}

/// Records one acquisition attempt (its [`result_label`]) and how long it took.
pub(crate) fn acquired(kind: &'static str, result: &'static str, elapsed: Duration) {
    metrics::counter!(ACQUIRE_TOTAL, "kind" => kind, "result" => result).increment(1);
    metrics::histogram!(ACQUIRE_SECONDS, "kind" => kind, "result" => result)
        .record(elapsed.as_secs_f64());
}

/// Records one extension (its [`result_label`]); a lease found gone also
/// counts as lost.
pub(crate) fn extended(kind: &'static str, result: &'static str) {
    metrics::counter!(EXTEND_TOTAL, "kind" => kind, "result" => result).increment(1);
    if matches!(result, "not_held" | "expired") {
        metrics::counter!(LEASE_LOST_TOTAL).increment(1);
    }
}

/// Records one release (its [`result_label`]).
pub(crate) fn released(kind: &'static str, result: &'static str) {
    metrics::counter!(RELEASE_TOTAL, "kind" => kind, "result" => result).increment(1);
}

/// Records a vote the health rules refused.
pub(crate) fn vote_refused(node: &NodeId, reason: &Ineligible) {
    metrics::counter!(VOTE_REFUSED_TOTAL, "node" => node.to_string(), "reason" => reason.label())
        .increment(1);
}

/// Records whether a node's votes count, after a probe.
pub(crate) fn node_eligible(node: &NodeId, eligible: bool) {
    metrics::gauge!(NODE_ELIGIBLE, "node" => node.to_string()).set(if eligible {
        1.0
    } else {
        0.0
    });
}

/// Records whether `node` is up, when that changes (node/link.rs).
pub(crate) fn node_up(node: &NodeId, up: bool) {
    metrics::gauge!(NODE_UP, "node" => node.to_string()).set(if up { 1.0 } else { 0.0 });
}

/// Counts a clock fault seen on `node` (health/clock_watch.rs).
pub(crate) fn node_clock_fault(node: &NodeId) {
    metrics::counter!(NODE_CLOCK_FAULTS, "node" => node.to_string()).increment(1);
}

/// Records how much validity a lock had left when its holder released it:
/// values near zero mean holders are cutting it close.
pub(crate) fn validity_at_release(left: Duration) {
    metrics::histogram!(RELEASE_VALIDITY_SECONDS).record(left.as_secs_f64());
}

/// Records a new hold; returns when it started, for [`hold_ended`].
pub(crate) fn hold_started(kind: &'static str) -> Instant {
    metrics::gauge!(HELD_LOCKS, "kind" => kind).increment(1.0);
    Instant::now()
}

/// Records the end of a hold started at `started` (released, forgotten,
/// dropped, or handed to `shutdown`).
pub(crate) fn hold_ended(kind: &'static str, started: Instant) {
    metrics::gauge!(HELD_LOCKS, "kind" => kind).decrement(1.0);
    metrics::histogram!(HOLD_SECONDS, "kind" => kind).record(started.elapsed().as_secs_f64());
}

/// One blocking acquire in progress: counted in the waiting gauge until it
/// is dropped, which records its whole wait (`cancelled` unless
/// [`finish`](Self::finish) said how it ended), so a dropped `lock()`
/// future is counted out too.
#[derive(Debug)]
pub(crate) struct Waiting {
    started: Instant,
    result: &'static str,
}

impl Waiting {
    pub(crate) fn start() -> Self {
        metrics::gauge!(WAITING_LOCKS).increment(1.0);
        Self {
            started: Instant::now(),
            result: "cancelled",
        }
    }

    /// How the wait ended.
    pub(crate) fn finish<T>(&mut self, result: &Result<T, Error>) {
        self.result = match result {
            Ok(_) => "acquired",
            Err(Error::WaitTimeout { .. }) => "timeout",
            Err(_) => "failed",
        };
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        metrics::gauge!(WAITING_LOCKS).decrement(1.0);
        metrics::histogram!(ACQUIRE_WAIT_SECONDS, "result" => self.result)
            .record(self.started.elapsed().as_secs_f64());
    }
}
