//! Metrics through the `metrics` facade: names, labels, and the calls that record them.
//!
//! Nothing is recorded unless the application installs a recorder (for
//! example a Prometheus exporter); without one every call is a no-op.
//! The names are part of the public contract, listed in `docs/observability.md`:
//!
//! | name | kind | labels | what |
//! |---|---|---|---|
//! | `redquorum_acquire_total` | counter | `kind`, `result` = `acquired`, `contended`, `unavailable`, `expired` | one per acquisition attempt |
//! | `redquorum_acquire_seconds` | histogram | `kind`, `result` | time from the first send to the decision |
//! | `redquorum_extend_total` | counter | `kind`, `result` = `extended`, `not_held`, `unavailable`, `expired` | one per extension |
//! | `redquorum_lease_lost_total` | counter | | extensions that found the lease gone (`not_held` or `expired`) |
//! | `redquorum_release_validity_seconds` | histogram | | validity left when `Lock::release` was called (0 when already expired) |
//! | `redquorum_release_total` | counter | `kind`, `result` = `released`, `not_held`, `unavailable` | one per release |
//! | `redquorum_vote_refused_total` | counter | `node`, `reason` = `replica`, `recent_restart`, `unverified`, `unknown_uptime`, `same_server` | votes not counted (health rules) |
//!
//! `kind` is the lock kind: `lock`, `write`, `read` or `reentrant`.
//! | `redquorum_node_eligible` | gauge | `node` | 1 when the node's votes count, 0 when refused, after each probe |

use std::time::Duration;

use crate::error::Error;
use crate::health::Ineligible;
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

/// A result label for an acquisition.
fn acquire_result(result: &Result<(), &Error>) -> &'static str {
    match result {
        Ok(()) => "acquired",
        Err(Error::Contended { .. }) => "contended",
        Err(Error::Expired { .. }) => "expired",
        Err(_) => "unavailable",
    }
}

/// Records one acquisition attempt and how long it took.
pub(crate) fn acquired(kind: &'static str, result: Result<(), &Error>, elapsed: Duration) {
    let result = acquire_result(&result);
    metrics::counter!(ACQUIRE_TOTAL, "kind" => kind, "result" => result).increment(1);
    metrics::histogram!(ACQUIRE_SECONDS, "kind" => kind, "result" => result)
        .record(elapsed.as_secs_f64());
}

/// Records one extension; a lease found gone also counts as lost.
pub(crate) fn extended(kind: &'static str, result: Result<(), &Error>) {
    let label = match result {
        Ok(()) => "extended",
        Err(Error::NotHeld { .. }) => "not_held",
        Err(Error::Expired { .. }) => "expired",
        Err(_) => "unavailable",
    };
    metrics::counter!(EXTEND_TOTAL, "kind" => kind, "result" => label).increment(1);
    if matches!(label, "not_held" | "expired") {
        metrics::counter!(LEASE_LOST_TOTAL).increment(1);
    }
}

/// Records one release.
pub(crate) fn released(kind: &'static str, result: Result<(), &Error>) {
    let label = match result {
        Ok(()) => "released",
        Err(Error::NotHeld { .. }) => "not_held",
        Err(_) => "unavailable",
    };
    metrics::counter!(RELEASE_TOTAL, "kind" => kind, "result" => label).increment(1);
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

/// Records how much validity a lock had left when its holder released it:
/// values near zero mean holders are cutting it close.
pub(crate) fn validity_at_release(left: Duration) {
    metrics::histogram!(RELEASE_VALIDITY_SECONDS).record(left.as_secs_f64());
}
