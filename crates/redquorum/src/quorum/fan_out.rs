//! The one fan-out: an operation sent to every node at once, and the votes
//! collected until the decision an operation needs. Acquire, extend,
//! release and the fencing rounds all go through [`gather`]; they differ
//! only in the operation and in when they stop waiting ([`Until`]).

use futures::stream::{FuturesUnordered, StreamExt};

use crate::health::Ineligible;
use crate::node::nodes::Nodes;
use crate::outcome::NodeOutcome;
use crate::protocol::op::Op;
use crate::quorum::tally::{Decision, Tally};
use crate::quorum::vote::{self, Vote};

/// When a fan-out stops waiting for answers. Whatever is still owed to a
/// node that has not answered then completes in the background when it
/// must run (a release, an extend: see `Op::must_run`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Until {
    /// At the first definite decision.
    Decided,
    /// As soon as a quorum acted (a release removed our hold on a quorum),
    /// else when every node has answered: a release that did not reach a
    /// quorum reports every node's answer.
    Won,
    /// When every node has answered (an operator's force-release); a node
    /// known to be down answers at once.
    Everyone,
}

impl Until {
    fn stops_at(self, decision: Decision) -> bool {
        match self {
            Until::Decided => decision != Decision::Pending,
            Until::Won => decision == Decision::Won,
            Until::Everyone => false,
        }
    }
}

/// Sends `op` to every node and collects the votes until `until`. Nodes
/// known to be down vote `Down` at once (node/link.rs), and are sent only what
/// undoes earlier operations, or a move ([`Op::reaches_down_nodes`]); when
/// they alone decide (too many are down),
/// nothing is sent. Every other node's operation is entered before the
/// first answer is awaited (`Batcher::enter`). Nodes
/// that had not answered by the stop are `Unanswered`. An acting vote
/// counts only if the node may vote now (node/nodes.rs).
pub(crate) async fn gather<F>(nodes: &Nodes, op: F, until: Until) -> (Decision, Vec<Vote>)
where
    F: Fn() -> Op,
{
    gather_among(nodes, op, until, None).await
}

/// [`gather`], where an acting vote counts only from the nodes `granters`
/// marks (by index): a fencing round counts only the nodes that granted
/// the hold (`Ineligible::NotAGranter`).
pub(crate) async fn gather_among<F>(
    nodes: &Nodes,
    op: F,
    until: Until,
    granters: Option<&[bool]>,
) -> (Decision, Vec<Vote>)
where
    F: Fn() -> Op,
{
    let mut tally = Tally::new(nodes.len());
    let mut votes: Vec<Vote> = nodes
        .iter()
        .map(|node| match node.down() {
            Some(cause) => vote::down(node.id(), cause),
            None => Vote {
                outcome: NodeOutcome::Unanswered,
                value: 0,
            },
        })
        .collect();
    votes.iter().for_each(|vote| {
        if vote.outcome.is_down() {
            tally.record(&vote.outcome);
        }
    });
    let mut decision = tally.decision();
    if until.stops_at(decision) {
        return (decision, votes);
    }
    let mut pending: FuturesUnordered<_> = nodes
        .iter()
        .enumerate()
        .filter_map(|(index, node)| {
            let op = op();
            let code = op.code;
            if votes[index].outcome.is_down() {
                // Not waited for; what undoes (or moves) is still sent (Node::submit).
                if op.reaches_down_nodes() {
                    drop(node.submit(op));
                }
                return None;
            }
            match node.submit(op) {
                Ok(answer) => Some(async move { (index, code, answer.await) }),
                // Went down since the votes above were read.
                Err(cause) => {
                    let down = vote::down(node.id(), cause);
                    tally.record(&down.outcome);
                    votes[index] = down;
                    None
                }
            }
        })
        .collect();
    decision = tally.decision();
    while let Some((index, code, answer)) = pending.next().await {
        let mut vote = vote::vote(nodes.get(index).id(), code, answer.reply);
        if !code.releases() {
            vote.outcome = nodes.admit(index, answer.by.as_deref(), vote.outcome);
        }
        let granted = granters.is_none_or(|g| g.get(index).copied().unwrap_or(false));
        if !granted && vote.outcome.is_acquired() {
            vote.outcome = NodeOutcome::Refused(Ineligible::NotAGranter);
        }
        tally.record(&vote.outcome);
        votes[index] = vote;
        decision = tally.decision();
        if until.stops_at(decision) {
            break;
        }
    }
    (decision, votes)
}
