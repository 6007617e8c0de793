//! The vote premise (`unbacked-vote`): every node whose vote the lock
//! counted for a grant ([`Session::voters`]) stored the hold. A vote is
//! the node's answer that it now holds the owner's token; a lock that
//! reads an answer wrongly (another operation's answer, one of another
//! call, an error as a grant, a node of another shard) counts a vote the
//! node never cast, and its quorum is short by that vote whether or not a
//! majority still happens to back the hold (`unbacked.rs`) or a second
//! holder comes in to overlap it.
//!
//! So at each audit read of a voter sent after the grant and answered
//! before the grant's deadline (and before the release), the voter must
//! show the owner's hold expiring no earlier than that deadline (less
//! [`FIXED`] for the reads' ms rounding): the hold was set there before
//! the node answered, at or after the acquire began, for the TTL the
//! deadline was cut from. An extension only pushes a node's expiry later,
//! so the grant's deadline is the one judged, on each voter alone.
//!
//! What excuses a voter is what makes a node unknown to the premise rule
//! ([`PremiseContext::unknown`]: a fault that takes holds off a node or
//! ages them, a clock outside the drift allowance), and a force-release of
//! the resource (every voter). A session whose hold the audit never saw
//! under the lock key (a permit's slot) is not judged, nor one renewed out
//! of sight (it has no deadline the harness saw).

use std::time::Duration;

use super::node_backing::NodeBacking;
use super::unbacked::{PremiseContext, holds_on_nodes, judge_each, rounds_within};
use crate::check::lock_delay::FIXED;
use crate::check::verdict::Evidence;
use crate::check::violation::Violation;
use crate::evidence::{HoldTrack, Session};

/// The first read of one of `s`'s voters that did not show its hold to its
/// granted deadline, and when it was answered.
pub(crate) fn unbacked_vote(
    ctx: &PremiseContext<'_>,
    s: &Session,
    tracks: &[&HoldTrack],
) -> Option<(NodeBacking, Duration)> {
    if s.voters.is_empty() || s.deadline_unseen {
        return None;
    }
    let (grant, due) = (s.grant?, s.validity_end?);
    let end = s.release.map_or(due, |release| release.min(due));
    let on_node = holds_on_nodes(s, tracks)?;
    for (index, round) in rounds_within(ctx.backing, grant, end) {
        for &node in &s.voters {
            let Some(Some(read)) = round.reads.get(node) else {
                continue;
            };
            if read.sent < grant || read.at > end || ctx.unknown(s, node, read.at) {
                continue;
            }
            if ctx.forced(s, read.at) {
                return None;
            }
            let shown = on_node.get(&node).and_then(|t| t.at_round(index as u32));
            let expires = shown.map(|seen| seen.high);
            if expires.is_none_or(|e| e + FIXED < due) {
                return Some((NodeBacking { node, expires }, read.at));
            }
        }
    }
    None
}

/// Every granted session one of whose voters did not store its hold.
pub(crate) fn violations(evidence: &Evidence<'_>) -> Vec<Violation> {
    judge_each(evidence, unbacked_vote)
        .into_iter()
        .map(|(s, (node, at))| Violation::UnbackedVote {
            session: Box::new(s.clone()),
            at,
            node,
        })
        .collect()
}

#[cfg(test)]
#[path = "vote_backing_tests.rs"]
mod tests;
