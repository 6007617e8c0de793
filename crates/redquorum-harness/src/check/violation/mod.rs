//! `Violation`: one broken promise the checker found, with the sessions
//! (or keys, or operator call) involved, a short kind for counting, when
//! the run first showed it; how it reads in a report is `violation/text.rs`.

use std::time::Duration;

use super::audit::{CounterShown, NodeBacking};
use super::operator::OperatorFault;
use crate::evidence::{Extension, KeyLife, LeakedKey, OperatorCall, Session};

mod text;

/// One broken promise, with the sessions involved.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{check, Session, Violation};
/// let ms = Duration::from_millis;
/// let mut late = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
/// late.write_start = Some(ms(120));
/// let verdict = check(&[late], &[("r".to_owned(), 1)].into_iter().collect(), &[]);
/// assert!(matches!(verdict.violations[0], Violation::StaleWrite { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// `second` was granted (or extended) inside `first`'s exclusive window.
    Overlap {
        /// The earlier holder.
        first: Box<Session>,
        /// The holder granted inside the earlier one's window.
        second: Box<Session>,
    },
    /// An unfenced holder started its protected write after its deadline, or
    /// a fenced store accepted a write whose token is below one it had
    /// already accepted (`by`).
    StaleWrite {
        /// The session.
        session: Box<Session>,
        /// The session whose higher token the store had accepted first.
        by: Option<Box<Session>>,
    },
    /// Two accepted read-modify-writes read the same value: `lost`'s update
    /// was overwritten by `by`'s.
    LostUpdate {
        /// The session whose update was lost (it wrote first).
        lost: Box<Session>,
        /// The session that wrote the same value over it.
        by: Box<Session>,
    },
    /// The protected value is not the number of accepted writes.
    CounterMismatch {
        /// The resource.
        resource: String,
        /// Accepted writes (each added one).
        completed: u64,
        /// Sessions whose write may or may not have landed.
        indeterminate: u64,
        /// The value found.
        value: i64,
    },
    /// A lock key left on a node after the run.
    Leaked(LeakedKey),
    /// A later grant carried a fencing token not above an earlier one's.
    FenceNotIncreasing {
        /// The earlier grant.
        earlier: Box<Session>,
        /// The later grant.
        later: Box<Session>,
    },
    /// A lock key lived on after its owner's attempt was unwound or its
    /// lease released (no fault on that node explains it).
    OrphanKey {
        /// What the audit saw.
        key: KeyLife,
        /// The owner's session, when the owner was granted.
        owner: Option<Box<Session>>,
        /// The session whose acquire tried the key's token, when the owner
        /// was never granted and the lock told its attempts.
        attempt: Option<Box<Session>>,
    },
    /// `early` was granted within the lock-delay after `vanished`'s hold
    /// expired unreleased.
    EarlyGrant {
        /// The holder whose hold certainly expired without its release.
        vanished: Box<Session>,
        /// The grant that came before the resource was free again.
        early: Box<Session>,
        /// The earliest moment a grant was allowed.
        blocked_until: Duration,
    },
    /// An operator's inspection or force-release broke its promise about
    /// `session`.
    Operator {
        /// The call.
        call: Box<OperatorCall>,
        /// The holder it concerns.
        session: Box<Session>,
        /// What it got wrong.
        fault: OperatorFault,
    },
    /// A granted holder's hold was gone from a node (the first audit read
    /// that no longer showed it, `key.gone`) before its owner began to give
    /// it back and before its TTL, with no fault or force-release there to
    /// explain it: someone else took it off.
    HoldRemoved {
        /// What the audit saw of the hold on that node.
        key: KeyLife,
        /// The holder.
        owner: Box<Session>,
    },
    /// A hold was seen on a node again after a read of that node, taken
    /// once its grant was decided, had not shown it (`key.back_after`),
    /// with no restart or clock jump there, nor its acquire held back, to
    /// explain it: something set it again where it had gone.
    HoldCameBack {
        /// What the audit saw of the hold's new life on that node.
        key: KeyLife,
        /// The holder.
        owner: Box<Session>,
    },
    /// `session`'s lease was extended by a call sent after the deadline
    /// then in force (`expired`) had passed: renewed after it ended.
    Revived {
        /// The holder.
        session: Box<Session>,
        /// The extension, sent after `expired`.
        extension: Extension,
        /// The deadline that had passed.
        expired: Duration,
    },
    /// At one audit round, a majority of the nodes, read while `session`
    /// believed it held (grant or renewed extension to its deadline), did
    /// not back it: its hold missing, or expiring before `deadline`, with
    /// no fault there to explain it (`unbacked.rs`).
    Unbacked {
        /// The holder.
        session: Box<Session>,
        /// When the round's last read against it was answered.
        at: Duration,
        /// The deadline then in force.
        deadline: Duration,
        /// Whether that deadline was a renewed extension's (else the grant's).
        extended: bool,
        /// The nodes that did not back it.
        nodes: Vec<NodeBacking>,
    },
    /// `session`'s fencing token was not held by the fence counters of a
    /// quorum of nodes after the lock handed it out (`audit/premise/token_backing.rs`).
    UnbackedToken {
        /// The holder.
        session: Box<Session>,
        /// The nodes whose counters showed less, at their first read after the grant.
        nodes: Vec<CounterShown>,
    },
    /// `session`'s hold, kept alive by its lock, was force-released by
    /// `call`, and the holder still believed in it past `due`, the time the
    /// lock's loss notice allows (`check/notices.rs`), with no fault
    /// on a majority of the nodes or its path to explain it.
    LossUnheard {
        /// The holder, its belief ended at its `release`.
        session: Box<Session>,
        /// The force-release that took its hold.
        call: Box<OperatorCall>,
        /// When it should have known.
        due: Duration,
    },
    /// `session`'s hold, kept alive by its lock, was asked to let go by
    /// `call`, and the holder had not heard it by `due`, the time the
    /// lock's notice allows (`check/notices.rs`), with no fault on a
    /// majority of the nodes or its path to explain it.
    AskUnheard {
        /// The holder.
        session: Box<Session>,
        /// The ask.
        call: Box<OperatorCall>,
        /// When it should have heard.
        due: Duration,
    },
    /// A node whose vote the lock counted for `session`'s grant did not
    /// hold it to the granted deadline at a read in between, with no fault
    /// there to explain it (`audit/premise/vote_backing.rs`): a vote it never cast.
    UnbackedVote {
        /// The holder.
        session: Box<Session>,
        /// When the read was answered.
        at: Duration,
        /// What the node showed.
        node: NodeBacking,
    },
}

impl Violation {
    /// A short name for counting: `overlap`, `stale-write`, `lost-update`,
    /// `counter`, `leaked`, `fence`, `orphan-key`, `lock-delay`, `inspection`,
    /// `force-release`, `revived`, `hold-removed`, `hold-came-back`,
    /// `unbacked`, `unbacked-token`, `unbacked-vote`, `loss-notice`,
    /// `ask-notice`.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{LeakedKey, Violation};
    /// let v = Violation::Leaked(LeakedKey { node: "n".into(), key: "k".into(), pttl_ms: 1 });
    /// assert_eq!(v.kind(), "leaked");
    /// ```
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Violation::Overlap { .. } => "overlap",
            Violation::StaleWrite { .. } => "stale-write",
            Violation::LostUpdate { .. } => "lost-update",
            Violation::CounterMismatch { .. } => "counter",
            Violation::Leaked(_) => "leaked",
            Violation::FenceNotIncreasing { .. } => "fence",
            Violation::OrphanKey { .. } => "orphan-key",
            Violation::EarlyGrant { .. } => "lock-delay",
            Violation::Operator {
                fault: OperatorFault::FenceNotAbove | OperatorFault::FenceNotBelow,
                ..
            } => "force-release",
            Violation::Operator { .. } => "inspection",
            Violation::Revived { .. } => "revived",
            Violation::HoldRemoved { .. } => "hold-removed",
            Violation::HoldCameBack { .. } => "hold-came-back",
            Violation::Unbacked { .. } => "unbacked",
            Violation::UnbackedToken { .. } => "unbacked-token",
            Violation::UnbackedVote { .. } => "unbacked-vote",
            Violation::LossUnheard { .. } => "loss-notice",
            Violation::AskUnheard { .. } => "ask-notice",
        }
    }

    /// When the run first showed it (history clock); `None` for what is only
    /// seen after the run (counter, leak). An orphan key counts from its
    /// last sighting, an upper bound.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redquorum_harness::{Session, Violation};
    /// let ms = Duration::from_millis;
    /// let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
    /// let b = Session::granted(1, "r", "b", ms(0), ms(50), ms(150));
    /// let v = Violation::Overlap { first: Box::new(a), second: Box::new(b) };
    /// assert_eq!(v.at(), Some(ms(50)));
    /// ```
    #[must_use]
    pub fn at(&self) -> Option<Duration> {
        match self {
            Violation::Overlap { second, .. } => second.grant,
            Violation::StaleWrite { session, .. } => session.write_start,
            Violation::LostUpdate { by, .. } => by.write_end,
            Violation::FenceNotIncreasing { later, .. } => later.grant,
            Violation::OrphanKey { key, .. } => Some(key.last_seen),
            Violation::EarlyGrant { early, .. } => early.grant,
            Violation::Operator { call, .. } => Some(call.start),
            Violation::Revived { extension, .. } => Some(extension.at),
            Violation::HoldRemoved { key, .. } => key.gone,
            Violation::HoldCameBack { key, .. } => Some(key.first_seen),
            Violation::Unbacked { at, .. } | Violation::UnbackedVote { at, .. } => Some(*at),
            Violation::UnbackedToken { nodes, .. } => nodes.iter().map(|n| n.at).max(),
            Violation::LossUnheard { due, .. } | Violation::AskUnheard { due, .. } => Some(*due),
            Violation::CounterMismatch { .. } | Violation::Leaked(_) => None,
        }
    }

    /// The sessions involved, for showing the faults around them.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{LeakedKey, Violation};
    /// let v = Violation::Leaked(LeakedKey { node: "n".into(), key: "k".into(), pttl_ms: 1 });
    /// assert!(v.sessions().is_empty());
    /// ```
    #[must_use]
    pub fn sessions(&self) -> Vec<&Session> {
        match self {
            Violation::Overlap { first, second } => vec![first, second],
            Violation::StaleWrite { session, by } => std::iter::once(session)
                .chain(by.as_ref())
                .map(|s| &**s)
                .collect(),
            Violation::LostUpdate { lost, by } => vec![lost, by],
            Violation::FenceNotIncreasing { earlier, later } => vec![earlier, later],
            Violation::OrphanKey { owner, attempt, .. } => {
                owner.iter().chain(attempt.iter()).map(|s| &**s).collect()
            }
            Violation::EarlyGrant {
                vanished, early, ..
            } => vec![vanished, early],
            Violation::Operator { session, .. }
            | Violation::Revived { session, .. }
            | Violation::Unbacked { session, .. }
            | Violation::UnbackedToken { session, .. }
            | Violation::UnbackedVote { session, .. }
            | Violation::LossUnheard { session, .. }
            | Violation::AskUnheard { session, .. } => vec![session],
            Violation::HoldRemoved { owner, .. } | Violation::HoldCameBack { owner, .. } => {
                vec![owner]
            }
            Violation::CounterMismatch { .. } | Violation::Leaked(_) => Vec::new(),
        }
    }
}
