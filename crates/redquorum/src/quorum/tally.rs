//! Pure quorum arithmetic: count node answers and decide as early as possible.
//!
//! The decision is made the moment it can no longer change: won once `N/2+1`
//! nodes agreed; lost once the nodes still out cannot lift us to a quorum and
//! the reason is known: contended once a majority reported another owner,
//! unavailable once failures alone rule a quorum out, or every node answered.

use std::collections::{BTreeMap, BTreeSet};

use crate::outcome::NodeOutcome;

/// Where a quorum operation stands after the answers seen so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Not decided: enough nodes are still out to go either way.
    Pending,
    /// A quorum acquired (or acted on our key).
    Won,
    /// Lost because a majority answered that another owner holds it.
    Contended,
    /// Lost because too many nodes failed or timed out (alone, or with
    /// others' holds on fewer than a majority).
    Unavailable,
}

/// Running counts of node answers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tally {
    nodes: usize,
    acquired: usize,
    taken: usize,
    failed: usize,
}

/// The majority of `nodes`: `N/2 + 1`.
pub(crate) fn quorum(nodes: usize) -> usize {
    nodes / 2 + 1
}

/// The items at least `quorum` nodes report, sorted: each node's answer is
/// the items it saw, an item a node reports twice counting once.
pub(crate) fn on_quorum<T: Ord>(
    answers: impl IntoIterator<Item = impl IntoIterator<Item = T>>,
    quorum: usize,
) -> Vec<T> {
    let mut nodes_per_item: BTreeMap<T, usize> = BTreeMap::new();
    for answer in answers {
        for item in answer.into_iter().collect::<BTreeSet<T>>() {
            *nodes_per_item.entry(item).or_default() += 1;
        }
    }
    nodes_per_item
        .into_iter()
        .filter(|(_, nodes)| *nodes >= quorum)
        .map(|(item, _)| item)
        .collect()
}

impl Tally {
    pub(crate) fn new(nodes: usize) -> Self {
        Self {
            nodes,
            acquired: 0,
            taken: 0,
            failed: 0,
        }
    }

    pub(crate) fn record(&mut self, outcome: &NodeOutcome) {
        match outcome {
            NodeOutcome::Acquired => self.acquired += 1,
            NodeOutcome::Taken => self.taken += 1,
            NodeOutcome::TimedOut
            | NodeOutcome::Failed(_)
            | NodeOutcome::Down(_)
            | NodeOutcome::Unanswered
            | NodeOutcome::Refused(_) => self.failed += 1,
        }
    }

    pub(crate) fn decision(&self) -> Decision {
        let quorum = quorum(self.nodes);
        let open = self.nodes - self.acquired - self.taken - self.failed;
        if self.acquired >= quorum {
            Decision::Won
        } else if self.acquired + open >= quorum {
            Decision::Pending
        } else if self.nodes - self.failed < quorum {
            // Even if every other node had been free we could not have won.
            Decision::Unavailable
        } else if self.taken >= quorum {
            // Another owner holds it on a majority: failures played no part.
            Decision::Contended
        } else if open == 0 {
            // Lost to failures and holds together: nobody holds a majority.
            Decision::Unavailable
        } else {
            // Lost, but whether others hold a majority waits for the rest.
            Decision::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Kind {
        Acquired,
        Taken,
        TimedOut,
    }

    fn outcome(kind: Kind) -> NodeOutcome {
        match kind {
            Kind::Acquired => NodeOutcome::Acquired,
            Kind::Taken => NodeOutcome::Taken,
            Kind::TimedOut => NodeOutcome::TimedOut,
        }
    }

    /// Every assignment of per-node outcomes for `n` nodes.
    fn assignments(n: usize) -> Vec<Vec<Kind>> {
        let kinds = [Kind::Acquired, Kind::Taken, Kind::TimedOut];
        (0..3usize.pow(n as u32))
            .map(|mut code| {
                (0..n)
                    .map(|_| {
                        let k = kinds[code % 3];
                        code /= 3;
                        k
                    })
                    .collect()
            })
            .collect()
    }

    /// Feeds outcomes in order; returns the first definite decision and how many answers it took.
    fn decide(kinds: &[Kind]) -> (Decision, usize) {
        let mut tally = Tally::new(kinds.len());
        for (seen, kind) in kinds.iter().enumerate() {
            tally.record(&outcome(*kind));
            let d = tally.decision();
            if d != Decision::Pending {
                return (d, seen + 1);
            }
        }
        (tally.decision(), kinds.len())
    }

    #[test]
    fn on_quorum_keeps_what_a_quorum_of_nodes_reports_once_each() {
        let answers = [vec!["b", "a", "a"], vec!["a", "c"], vec!["b", "c"], vec![]];
        assert_eq!(on_quorum(answers.clone(), 2), ["a", "b", "c"]);
        // "a" twice on node 0 is one node: two nodes, short of three.
        assert!(on_quorum(answers.clone(), 3).is_empty());
        assert_eq!(on_quorum(answers, 1), ["a", "b", "c"]);
    }

    #[test]
    fn every_assignment_for_3_and_5_nodes_is_won_exactly_with_a_healthy_quorum() {
        for n in [1, 3, 5] {
            for kinds in assignments(n) {
                let acquired = kinds.iter().filter(|k| **k == Kind::Acquired).count();
                let failed = kinds.iter().filter(|k| **k == Kind::TimedOut).count();
                let (decision, _) = decide(&kinds);
                assert_ne!(
                    decision,
                    Decision::Pending,
                    "n={n} {kinds:?}: undecided after all answers"
                );
                assert_eq!(
                    decision == Decision::Won,
                    acquired >= quorum(n),
                    "n={n} {kinds:?}: decision {decision:?}"
                );
                let taken = n - acquired - failed;
                // Contended exactly when another owner holds a majority.
                if decision != Decision::Won {
                    let expected = if taken >= quorum(n) {
                        Decision::Contended
                    } else {
                        Decision::Unavailable
                    };
                    assert_eq!(decision, expected, "n={n} {kinds:?}");
                }
            }
        }
    }

    #[test]
    fn decision_is_made_as_soon_as_it_cannot_change() {
        // 3 of 5 taken: lost after the third answer, without waiting for the rest.
        let kinds = [
            Kind::Taken,
            Kind::Taken,
            Kind::Taken,
            Kind::Acquired,
            Kind::Acquired,
        ];
        assert_eq!(decide(&kinds), (Decision::Contended, 3));
        // 3 of 5 acquired first: won after the third answer.
        let kinds = [
            Kind::Acquired,
            Kind::Acquired,
            Kind::Acquired,
            Kind::Taken,
            Kind::Taken,
        ];
        assert_eq!(decide(&kinds), (Decision::Won, 3));
        // 3 of 5 timed out: unavailable.
        let kinds = [
            Kind::TimedOut,
            Kind::TimedOut,
            Kind::TimedOut,
            Kind::Acquired,
            Kind::Acquired,
        ];
        assert_eq!(decide(&kinds), (Decision::Unavailable, 3));
        // 1 taken and 2 timed out: lost after three answers, but whether
        // another owner holds a majority waits for the last two.
        let kinds = [
            Kind::Taken,
            Kind::TimedOut,
            Kind::TimedOut,
            Kind::Taken,
            Kind::Taken,
        ];
        assert_eq!(decide(&kinds), (Decision::Contended, 5));
        let kinds = [
            Kind::Taken,
            Kind::TimedOut,
            Kind::TimedOut,
            Kind::Acquired,
            Kind::Acquired,
        ];
        assert_eq!(decide(&kinds), (Decision::Unavailable, 5));
    }

    proptest! {
        #[test]
        fn decision_does_not_depend_on_answer_order(
            kinds in proptest::collection::vec(
                prop_oneof![Just(Kind::Acquired), Just(Kind::Taken), Just(Kind::TimedOut)], 1..=9usize)
                .prop_filter("odd", |v| v.len() % 2 == 1),
            seed in any::<u64>(),
        ) {
            let mut shuffled = kinds.clone();
            // deterministic Fisher-Yates with the seed
            let mut s = seed;
            for i in (1..shuffled.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                shuffled.swap(i, (s >> 33) as usize % (i + 1));
            }
            // Not only won or lost: why it was lost, too.
            prop_assert_eq!(decide(&kinds).0, decide(&shuffled).0);
            // an early decision never needs more answers than there are nodes
            prop_assert!(decide(&shuffled).1 <= kinds.len());
        }
    }
}
