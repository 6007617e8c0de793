//! What the checker reads and what it answers: the [`Evidence`] a run
//! leaves, and the [`Verdict`] of violations found in it.

use std::collections::BTreeMap;
use std::time::Duration;

use super::lock_delay::LockDelayRule;
use super::violation::Violation;
use crate::evidence::{Backing, KeyLife, LeakedKey, OperatorCall, RuntimeLag, Session};
use crate::faults::FaultEvent;

/// The checker's verdict.
///
/// # Examples
///
/// ```
/// let verdict = redquorum_harness::check(&[], &Default::default(), &[]);
/// assert!(verdict.is_ok());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Every violation found.
    pub violations: Vec<Violation>,
}

impl Verdict {
    /// True when nothing was violated.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum_harness::Verdict::default().is_ok());
    /// ```
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// Violation counts by [`Violation::kind`].
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum_harness::Verdict::default().by_kind().is_empty());
    /// ```
    #[must_use]
    pub fn by_kind(&self) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for v in &self.violations {
            *counts.entry(v.kind()).or_default() += 1;
        }
        counts
    }

    /// How many violations of `kind`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::Verdict::default().count("overlap"), 0);
    /// ```
    #[must_use]
    pub fn count(&self, kind: &str) -> usize {
        self.violations.iter().filter(|v| v.kind() == kind).count()
    }
}

/// Everything a run leaves for the checker.
///
/// # Examples
///
/// ```
/// let values = Default::default();
/// let evidence = redquorum_harness::Evidence::new(&[], &values);
/// assert!(redquorum_harness::check_evidence(&evidence).is_ok());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// The history.
    pub sessions: &'a [Session],
    /// Each resource's protected value after the run.
    pub protected: &'a BTreeMap<String, i64>,
    /// Lock keys found after the run plus the max TTL.
    pub leaked: &'a [LeakedKey],
    /// What the key audit saw during the run.
    pub keys: &'a [KeyLife],
    /// The lock's TTL (a hold's time left on a node is the TTL less the
    /// age the audit saw). Default: 2 s.
    pub ttl: Duration,
    /// The faults injected (they excuse a key that lingers on their node).
    pub faults: &'a [FaultEvent],
    /// How long an ended owner's key may linger before it is an orphan
    /// (the unwind or release in flight). Default: 1 s.
    pub slack: Duration,
    /// The run's lock-delay, when its lock had one (checked: no early grant).
    pub lock_delay: Option<LockDelayRule>,
    /// An operator's inspections and force-releases during the run.
    pub operator: &'a [OperatorCall],
    /// How many nodes the lock had (an inspection every node answered must
    /// name every certain holder). Zero: unknown, not checked.
    pub nodes: usize,
    /// The key audit's rounds and every hold's expiry in them (the
    /// premise rule, `unbacked`). Default: none, not checked.
    pub backing: &'a Backing,
    /// Nodes whose clocks run outside the drift allowance (the lock takes
    /// their votes away): unknown to the premise rule.
    pub clock_off: &'a [usize],
    /// When client runtimes and fault proxies woke late (a loaded machine):
    /// a removal on such a path may land that much later. Default: none.
    pub lags: &'a [RuntimeLag],
}

impl<'a> Evidence<'a> {
    /// Sessions and protected values only.
    ///
    /// # Examples
    ///
    /// See [`Evidence`].
    #[must_use]
    pub fn new(sessions: &'a [Session], protected: &'a BTreeMap<String, i64>) -> Self {
        Self {
            sessions,
            protected,
            leaked: &[],
            keys: &[],
            ttl: Duration::from_secs(2),
            faults: &[],
            slack: Duration::from_secs(1),
            lock_delay: None,
            operator: &[],
            nodes: 0,
            backing: Backing::EMPTY,
            clock_off: &[],
            lags: &[],
        }
    }
}
