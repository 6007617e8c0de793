//! Settling a fan-out: turning the decision and the votes of acquire,
//! extend and release into their result, recorded in the metrics and the
//! operation's span.

use std::time::{Duration, Instant};

use crate::error::Error;
use crate::metrics;
use crate::node::nodes::Nodes;
use crate::outcome::Outcomes;
use crate::protocol::claim::Claim;
use crate::quorum::tally::Decision;
use crate::quorum::validity;
use crate::quorum::vote::Vote;

/// What settling needs of the coordinator: its nodes and the drift factor
/// (`Quorum::settling`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settle<'a> {
    pub(crate) nodes: &'a Nodes,
    pub(crate) drift_factor: f64,
}

impl Settle<'_> {
    fn quorum(&self) -> usize {
        self.nodes.quorum()
    }

    /// True when a fan-out ended in a quorum with validity left.
    pub(crate) fn is_granted(&self, decision: Decision, elapsed: Duration, ttl: Duration) -> bool {
        decision == Decision::Won && validity::validity(ttl, elapsed, self.drift_factor).is_some()
    }

    /// The result of a finished acquire or extend fan-out, recorded in the
    /// metrics and the operation's span. A lost acquire is `Contended`; a
    /// lost extend is `NotHeld` (our hold is gone from too many nodes).
    pub(crate) fn settle(
        &self,
        operation: Operation,
        claim: &Claim,
        decision: Decision,
        votes: Vec<Vote>,
        start: Instant,
        elapsed: Duration,
    ) -> Result<Instant, Error> {
        trace_votes(&votes, self.nodes, elapsed);
        let resource = claim.resource.clone();
        let result = match decision {
            Decision::Won => match validity::validity(claim.ttl, elapsed, self.drift_factor) {
                Some(validity) => Ok(start + validity),
                None => Err(Error::Expired {
                    resource,
                    elapsed,
                    ttl: claim.ttl,
                }),
            },
            Decision::Unavailable => Err(Error::Unavailable {
                resource,
                outcomes: self.outcomes(votes),
            }),
            Decision::Contended | Decision::Pending => {
                let outcomes = self.outcomes(votes);
                Err(match operation {
                    Operation::Acquire => Error::Contended { resource, outcomes },
                    Operation::Extend => Error::NotHeld { resource, outcomes },
                })
            }
        };
        let kind = claim.kind.name();
        let label = metrics::result_label(result.as_ref().map(|_| ()), operation.ok_label());
        match operation {
            Operation::Acquire => metrics::acquired(kind, label, elapsed),
            Operation::Extend => metrics::extended(kind, label),
        }
        record_span(label, elapsed);
        result
    }

    /// The result of a release on every node: how many removed our hold, or why none did.
    pub(crate) fn settle_release(
        &self,
        claim: &Claim,
        votes: Vec<Vote>,
        start: Instant,
    ) -> Result<usize, Error> {
        let elapsed = start.elapsed();
        trace_votes(&votes, self.nodes, elapsed);
        let released = votes.iter().filter(|v| v.outcome.is_acquired()).count();
        let taken = votes.iter().filter(|v| v.outcome.is_taken()).count();
        let result = if released > 0 {
            Ok(released)
        } else {
            let (resource, outcomes) = (claim.resource.clone(), self.outcomes(votes));
            if taken >= self.quorum() {
                Err(Error::NotHeld { resource, outcomes })
            } else {
                Err(Error::Unavailable { resource, outcomes })
            }
        };
        let label = metrics::result_label(result.as_ref().map(|_| ()), "released");
        metrics::released(claim.kind.name(), label);
        record_span(label, elapsed);
        result
    }

    pub(crate) fn outcomes(&self, votes: Vec<Vote>) -> Outcomes {
        Outcomes::new(
            self.nodes
                .ids()
                .cloned()
                .zip(votes.into_iter().map(|v| v.outcome))
                .collect(),
            self.quorum(),
        )
    }
}

/// Which lease operation a fan-out was, for its result and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Acquire,
    Extend,
}

impl Operation {
    fn ok_label(self) -> &'static str {
        match self {
            Operation::Acquire => "acquired",
            Operation::Extend => "extended",
        }
    }
}

/// Per-node votes, at debug level only: one line per operation, never one per node at info.
fn trace_votes(votes: &[Vote], nodes: &Nodes, elapsed: Duration) {
    if tracing::enabled!(tracing::Level::DEBUG) {
        let per_node: Vec<String> = nodes
            .ids()
            .zip(votes)
            .map(|(node, vote)| format!("{node}={}", vote.outcome))
            .collect();
        tracing::debug!(outcomes = %per_node.join(", "), elapsed_ms = elapsed.as_millis() as u64, "node outcomes");
    }
}

/// Fills the current operation span's `result` and `elapsed_ms` fields.
fn record_span(label: &str, elapsed: Duration) {
    let span = tracing::Span::current();
    span.record("result", label);
    span.record("elapsed_ms", elapsed.as_millis() as u64);
}
