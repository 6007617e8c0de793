//! What each node answered to one quorum operation.

use std::fmt;

use crate::health::ineligible::Ineligible;
use crate::node_error::NodeError;
use crate::node_id::NodeId;

/// One node's answer to an acquire, extend or release.
///
/// For an acquire, `Acquired` means the key now holds our owner token and
/// `Taken` means another owner holds it. For an extend or release, `Acquired`
/// means the owner-checked script acted on our key and `Taken` means the key
/// was absent or not ours.
///
/// # Examples
///
/// ```
/// use redquorum::NodeOutcome;
///
/// assert!(NodeOutcome::Acquired.is_acquired());
/// assert!(!NodeOutcome::Taken.is_failure());
/// assert!(NodeOutcome::TimedOut.is_failure());
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum NodeOutcome {
    /// The node holds our owner token (or acted on it).
    Acquired,
    /// Another owner holds the key (or, for extend/release, it is not ours).
    Taken,
    /// No answer within the per-node timeout.
    TimedOut,
    /// The node answered with an error, or could not be reached.
    Failed(NodeError),
    /// The decision was made before this node answered; it was unwound anyway.
    Unanswered,
    /// The node was known to be down (its connection failed, or it left a
    /// call unanswered for the whole node timeout), so the operation did not
    /// wait for it: it was not sent, or, if it undoes earlier operations (a
    /// release), it was sent without waiting for the answer. The error says
    /// why the node is down.
    Down(NodeError),
    /// The node answered, but its vote does not count: it is a replica, or it
    /// may have forgotten keys after a restart (see [`Ineligible`]).
    Refused(Ineligible),
}

impl NodeOutcome {
    /// True for [`NodeOutcome::Acquired`].
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum::NodeOutcome::Acquired.is_acquired());
    /// ```
    #[must_use]
    pub fn is_acquired(&self) -> bool {
        matches!(self, Self::Acquired)
    }

    /// True for [`NodeOutcome::Taken`].
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum::NodeOutcome::Taken.is_taken());
    /// ```
    #[must_use]
    pub fn is_taken(&self) -> bool {
        matches!(self, Self::Taken)
    }

    /// True for [`NodeOutcome::Down`]: the node was known to be down.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!redquorum::NodeOutcome::TimedOut.is_down());
    /// ```
    #[must_use]
    pub fn is_down(&self) -> bool {
        matches!(self, Self::Down(_))
    }

    /// True when the node's answer does not count: timed out, failed, down, or refused.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum::NodeOutcome::TimedOut.is_failure());
    /// ```
    #[must_use]
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Self::TimedOut | Self::Failed(_) | Self::Down(_) | Self::Refused(_)
        )
    }
}

impl fmt::Display for NodeOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Acquired => f.write_str("acquired"),
            Self::Taken => f.write_str("taken"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Failed(error) => write!(f, "failed: {error}"),
            Self::Unanswered => f.write_str("unanswered"),
            Self::Down(error) => write!(f, "down: {error}"),
            Self::Refused(reason) => write!(f, "refused: {reason}"),
        }
    }
}

/// Every node's outcome for one quorum operation, in node order.
///
/// Kept in errors so a caller (or an operator reading a log) can see which
/// node said what. `Display` is one line of counts.
///
/// # Examples
///
/// ```no_run
/// # async fn demo(redlock: redquorum::Redlock) {
/// match redlock.try_lock("orders:42").await {
///     Err(redquorum::Error::Contended { outcomes, .. }) => {
///         for (node, outcome) in outcomes.iter() {
///             println!("{node}: {outcome}");
///         }
///     }
///     _ => {}
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct Outcomes {
    entries: Vec<(NodeId, NodeOutcome)>,
    quorum: usize,
    /// A read (inspect, list, leader): `Acquired` then means "answered".
    read: bool,
}

impl Outcomes {
    pub(crate) fn new(entries: Vec<(NodeId, NodeOutcome)>, quorum: usize) -> Self {
        Self {
            entries,
            quorum,
            read: false,
        }
    }

    /// The outcomes of a read, whose nodes that answered are `Acquired`:
    /// said as "read", since nothing was acquired.
    pub(crate) fn of_read(entries: Vec<(NodeId, NodeOutcome)>, quorum: usize) -> Self {
        Self {
            read: true,
            ..Self::new(entries, quorum)
        }
    }

    /// Each node with its outcome, in the order the nodes were configured.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(outcomes: &redquorum::Outcomes) {
    /// let failed: Vec<_> = outcomes.iter().filter(|(_, o)| o.is_failure()).collect();
    /// # }
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (&NodeId, &NodeOutcome)> {
        self.entries.iter().map(|(node, outcome)| (node, outcome))
    }

    /// How many nodes answered `Acquired`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(outcomes: &redquorum::Outcomes) {
    /// assert!(outcomes.acquired() < outcomes.quorum());
    /// # }
    /// ```
    #[must_use]
    pub fn acquired(&self) -> usize {
        self.count(NodeOutcome::is_acquired)
    }

    /// How many nodes answered `Taken`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(outcomes: &redquorum::Outcomes) {
    /// println!("{} nodes saw another owner", outcomes.taken());
    /// # }
    /// ```
    #[must_use]
    pub fn taken(&self) -> usize {
        self.count(NodeOutcome::is_taken)
    }

    /// How many nodes timed out, failed, were down, or had their vote refused.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(outcomes: &redquorum::Outcomes) {
    /// println!("{} nodes failed", outcomes.failed());
    /// # }
    /// ```
    #[must_use]
    pub fn failed(&self) -> usize {
        self.count(NodeOutcome::is_failure)
    }

    /// The number of nodes the operation needed: `N/2 + 1`.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(outcomes: &redquorum::Outcomes) {
    /// assert_eq!(outcomes.quorum(), outcomes.len() / 2 + 1);
    /// # }
    /// ```
    #[must_use]
    pub fn quorum(&self) -> usize {
        self.quorum
    }

    /// The number of nodes (N).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(outcomes: &redquorum::Outcomes) {
    /// assert!(outcomes.len() % 2 == 1);
    /// # }
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Always false: a `Redlock` has at least one node.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(outcomes: &redquorum::Outcomes) {
    /// assert!(!outcomes.is_empty());
    /// # }
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn count(&self, predicate: impl Fn(&NodeOutcome) -> bool) -> usize {
        self.entries.iter().filter(|(_, o)| predicate(o)).count()
    }
}

impl fmt::Display for Outcomes {
    /// The counts, then why each failed node failed, nodes with the same
    /// cause together: `... (quorum 2); cannot connect: connection refused:
    /// 127.0.0.1:7001, 127.0.0.1:7002`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unanswered = self.len() - self.acquired() - self.taken() - self.failed();
        if self.read {
            write!(
                f,
                "{} read, {} failed of {} nodes (quorum {})",
                self.acquired(),
                self.failed(),
                self.len(),
                self.quorum
            )?;
        } else {
            write!(
                f,
                "{} acquired, {} taken, {} failed, {} unanswered of {} nodes (quorum {})",
                self.acquired(),
                self.taken(),
                self.failed(),
                unanswered,
                self.len(),
                self.quorum
            )?;
        }
        let mut causes: Vec<(String, Vec<&NodeId>)> = Vec::new();
        for (node, outcome) in &self.entries {
            let cause = match outcome {
                NodeOutcome::TimedOut => "timed out".to_owned(),
                NodeOutcome::Failed(error) => error.reason(),
                NodeOutcome::Down(error) => format!("down ({})", error.reason()),
                NodeOutcome::Refused(reason) => format!("vote refused: {reason}"),
                _ => continue,
            };
            match causes.iter_mut().find(|(c, _)| *c == cause) {
                Some((_, nodes)) => nodes.push(node),
                None => causes.push((cause, vec![node])),
            }
        }
        for (cause, nodes) in causes {
            let nodes: Vec<String> = nodes.iter().map(ToString::to_string).collect();
            write!(f, "; {cause}: {}", nodes.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fred::error::{Error as FredError, ErrorKind};

    #[test]
    fn a_read_counts_nodes_read_not_acquired() {
        let failed = FredError::new(ErrorKind::IO, "cannot connect: connection refused");
        let entries = vec![
            (NodeId::new("a", 1), NodeOutcome::Acquired),
            (
                NodeId::new("b", 1),
                NodeOutcome::Failed(NodeError::new(NodeId::new("b", 1), failed)),
            ),
        ];
        assert_eq!(
            Outcomes::of_read(entries, 2).to_string(),
            "1 read, 1 failed of 2 nodes (quorum 2); IO Error: cannot connect: connection refused: b:1"
        );
    }
}
