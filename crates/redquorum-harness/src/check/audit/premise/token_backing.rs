//! The token premise (`unbacked-token`): a fencing token the lock gave a
//! holder is backed by the fence counters of a quorum. The lock writes a
//! token back to its resource's counter on the nodes that granted before
//! it hands the token out, and counts a quorum of them; later proposals
//! start above each counter, so every later token is above it. A token
//! that a quorum's counters do not hold is one the next holder's quorum
//! can miss: it may get the same token, or a lower one.
//!
//! Checked from the key audit's fence counters (`evidence/audit/backing.rs`,
//! `CounterTrack`): for each holder with a token, each node's first
//! good read sent after the grant (the adapter reads the token before it
//! reports the grant). A counter only rises, so a node whose read shows
//! less than the token (or no counter) did not hold it when the lock
//! handed the token out. More such nodes than the quorum can spare
//! (`N − quorum`) is a violation.
//!
//! What makes a node unknown, never against: no good read of it after
//! the grant; a fault on it from the holder's acquire (for a hold adopted
//! from a lease ticket, which carries its token: the acquire of the hold
//! the token was written back for) to that read that
//! loses or rewrites what it stored (`fence-loss`, and [`LOSES_OR_AGES`]:
//! a kill or restart replaying an older log, a failover, a migration; a
//! clock fault, since the counter's floor is the node's clock). A history
//! without counters (from before they were read) is not judged.

use std::collections::HashMap;
use std::time::Duration;

use super::super::hold_life::LOSES_OR_AGES;
use super::counter_shown::CounterShown;
use crate::check::verdict::Evidence;
use crate::check::violation::Violation;
use crate::evidence::{Backing, Session};
use crate::faults::{FaultEvent, FaultKind};

/// The suffix of a resource's fence counter key after its lock key.
const COUNTER_SUFFIX: &str = ":fence";

/// The nodes whose counters did not hold `s`'s token, when they are more
/// than a quorum can spare. `issued` is when the token's first holder
/// began to acquire: `s`'s own start, or, for a hold adopted from a lease
/// ticket (which carries its token), the start of the hold it was first
/// written back for ([`issued_at`]); a fault from then on excuses a node.
pub(crate) fn unbacked_token(
    backing: &Backing,
    faults: &[FaultEvent],
    s: &Session,
    issued: Duration,
) -> Option<Vec<CounterShown>> {
    let (token, grant) = (s.fence?, s.grant?);
    let nodes = backing.rounds.first()?.reads.len();
    let key_end = format!("{{{}}}{COUNTER_SUFFIX}", s.resource);
    let first = backing
        .rounds
        .partition_point(|r| r.reads.iter().flatten().all(|read| read.sent < grant));
    let mut against = Vec::new();
    for node in 0..nodes {
        let Some((round, read)) =
            backing
                .rounds
                .iter()
                .enumerate()
                .skip(first)
                .find_map(|(round, r)| {
                    r.reads
                        .get(node)
                        .copied()
                        .flatten()
                        .filter(|read| read.sent >= grant)
                        .map(|read| (round, read))
                })
        else {
            continue;
        };
        let rewritten = faults.iter().any(|f| {
            (f.kind == FaultKind::FenceLoss || LOSES_OR_AGES.contains(&f.kind))
                && f.nodes.contains(&node)
                && f.overlaps(issued, read.at)
        });
        if rewritten {
            continue;
        }
        let value = backing
            .counters
            .iter()
            .find(|track| track.node == node && track.key.ends_with(&key_end))
            .map_or(0, |track| track.at_round(round as u32));
        if value < token {
            against.push(CounterShown {
                node,
                value,
                at: read.at,
            });
        }
    }
    let quorum = nodes / 2 + 1;
    (against.len() > nodes - quorum).then_some(against)
}

/// When the token `s` holds was first issued: the start of the first hold
/// of the chain of lease tickets `s` was adopted through (`by_owner`: the
/// sessions by owner token), else `s`'s own start.
pub(crate) fn issued_at(s: &Session, by_owner: &HashMap<&str, &Session>) -> Duration {
    let mut first = s;
    // A chain of adoptions is as long as the sessions at most.
    for _ in 0..by_owner.len() {
        match (first.adopted_from.as_deref()).and_then(|from| by_owner.get(from)) {
            Some(&from) if from.fence == s.fence => first = from,
            _ => break,
        }
    }
    first.start.min(s.start)
}

/// Every granted session of `evidence` whose token a quorum's counters
/// did not hold.
pub(crate) fn violations(evidence: &Evidence<'_>) -> Vec<Violation> {
    let backing = evidence.backing;
    if backing.counters.is_empty() {
        return Vec::new();
    }
    let by_owner: HashMap<&str, &Session> = (evidence.sessions.iter())
        .map(|s| (s.owner.as_str(), s))
        .collect();
    evidence
        .sessions
        .iter()
        .filter_map(|s| {
            let issued = issued_at(s, &by_owner);
            let nodes = unbacked_token(backing, evidence.faults, s, issued)?;
            Some(Violation::UnbackedToken {
                session: Box::new(s.clone()),
                nodes,
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "token_backing_tests.rs"]
mod tests;
