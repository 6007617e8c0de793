//! The fencing proposal's choice (step 1 of `protocol/fence.rs`'s
//! protocol): the candidate token is the highest proposal of the granting
//! quorum, and there is none unless a quorum of them proposed.

use crate::outcome::NodeOutcome;
use crate::quorum::vote::MIN_PROPOSAL;

/// The highest fencing proposal of the nodes that granted, if a quorum of
/// them proposed (a node whose fence key is corrupt grants without
/// proposing).
pub(crate) fn highest_proposal<'a>(
    votes: impl Iterator<Item = (&'a NodeOutcome, i64)>,
    quorum: usize,
) -> Option<i64> {
    let (count, highest) = votes
        .filter(|(outcome, value)| outcome.is_acquired() && *value >= MIN_PROPOSAL)
        .fold((0, 0), |(count, highest), (_, value)| {
            (count + 1, highest.max(value))
        });
    (count >= quorum).then_some(highest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn highest(answers: &[(NodeOutcome, i64)], quorum: usize) -> Option<i64> {
        highest_proposal(answers.iter().map(|(o, v)| (o, *v)), quorum)
    }

    #[test]
    fn the_token_is_the_highest_proposal_of_the_granting_nodes_if_a_quorum_proposed() {
        use NodeOutcome::{Acquired, Taken, Unanswered};
        let k = 1 << 40;
        let granted = [
            (Acquired, k + 5),
            (Acquired, k + 9),
            (Taken, k + 100),
            (Acquired, k + 7),
            (Unanswered, k + 200),
        ];
        assert_eq!(highest(&granted, 3), Some(k + 9));
        // A granting node without a proposal (corrupt fence key): 2 of 3 proposed.
        let short = [(Acquired, k + 5), (Acquired, 0), (Acquired, k + 7)];
        assert_eq!(highest(&short, 3), None);
    }
}
