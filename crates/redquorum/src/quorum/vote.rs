//! A vote: one node's answer to one operation, read from what the lock script
//! answered (its outcome, and the fencing proposal it carried).

use crate::node_error::NodeError;
use crate::node_id::NodeId;
use crate::outcome::NodeOutcome;
use crate::protocol::op::{self, Code, Reply};

/// The smallest proposal a node can make (`node_ms * 1024` with a clock
/// past 1970); any acquire answer at least this is a proposal.
pub(crate) const MIN_PROPOSAL: i64 = 1024;

/// One node's answer to one operation.
#[derive(Debug)]
pub(crate) struct Vote {
    pub(crate) outcome: NodeOutcome,
    /// The integer it answered when it acted (a fencing proposal); 0 otherwise.
    pub(crate) value: i64,
}

/// Reads one node's answer as a vote: for an acquire, 0 is taken, 1 granted,
/// P >= 1024 granted with fencing proposal P, -2 granted without one (the
/// fence key is not a number); for the owner-checked operations, 1 acted and
/// 0 not ours (a holder's proposal: P >= 1024, or 0 not ours); a
/// force-release's proposal is a number; an error is the node's failure.
pub(crate) fn vote(node: &NodeId, code: Code, answer: Reply) -> Vote {
    let failed = |error: fred::error::Error| {
        let outcome = match error.kind() {
            fred::error::ErrorKind::Timeout => NodeOutcome::TimedOut,
            _ => NodeOutcome::Failed(NodeError::new(node.clone(), error)),
        };
        Vote { outcome, value: 0 }
    };
    let acted = |value| Vote {
        outcome: NodeOutcome::Acquired,
        value,
    };
    match (code, op::integer(answer)) {
        (_, Err(error)) => failed(error),
        (Code::ForceRelease, Ok(proposal)) => acted(proposal),
        (Code::Propose, Ok(proposal)) if proposal >= MIN_PROPOSAL => acted(proposal),
        (Code::Acquire | Code::PlainAcquire, Ok(-2)) => acted(0),
        (Code::Acquire | Code::PlainAcquire, Ok(proposal)) if proposal >= MIN_PROPOSAL => {
            acted(proposal)
        }
        (_, Ok(1)) => acted(0),
        (_, Ok(0)) => Vote {
            outcome: NodeOutcome::Taken,
            value: 0,
        },
        (_, Ok(other)) => failed(fred::error::Error::new(
            fred::error::ErrorKind::Protocol,
            format!("the lock script answered {other} to {code:?}"),
        )),
    }
}

/// The vote of a node known to be down, not waited for: `cause` says why it is down.
pub(crate) fn down(node: &NodeId, cause: fred::error::Error) -> Vote {
    Vote {
        outcome: NodeOutcome::Down(NodeError::new(node.clone(), cause)),
        value: 0,
    }
}
