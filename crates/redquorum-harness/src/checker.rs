//! The checker: pure logic over a recorded history, proving per resource
//! (1) no two holders' exclusive windows overlap, (2) no lost update on the
//! protected value, (3) no lock key outlived the run plus the max TTL, and
//! (4) fencing tokens strictly increase in grant order, when present. It also
//! flags a holder that wrote after its validity ended (the assumption a
//! paused client breaks).

use std::collections::BTreeMap;
use std::fmt;

use crate::history::{Outcome, Session};

/// A lock key found on a node after the run plus the max TTL.
///
/// # Examples
///
/// ```
/// let leak = redquorum_harness::LeakedKey { node: "127.0.0.1:7001".into(), key: "lock:a".into(), pttl_ms: 900 };
/// assert!(leak.to_string().contains("lock:a"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakedKey {
    /// The node, `host:port`.
    pub node: String,
    /// The key.
    pub key: String,
    /// Its PTTL when found, in ms (−1: no expiry at all).
    pub pttl_ms: i64,
}

impl fmt::Display for LeakedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} on {} (pttl {} ms)",
            self.key, self.node, self.pttl_ms
        )
    }
}

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
    /// `second` was granted before `first`'s exclusive window ended.
    Overlap {
        /// The earlier holder.
        first: Box<Session>,
        /// The holder granted inside the earlier one's window.
        second: Box<Session>,
    },
    /// A holder started its protected write after its validity had ended.
    StaleWrite {
        /// The session.
        session: Box<Session>,
    },
    /// The protected value is not the number of completed critical sections.
    LostUpdate {
        /// The resource.
        resource: String,
        /// Completed sessions (each added one).
        completed: u64,
        /// Sessions whose write may or may not have landed.
        indeterminate: u64,
        /// The value found.
        value: i64,
    },
    /// A lock key left on a node.
    Leaked(LeakedKey),
    /// A later grant carried a fencing token not above an earlier one's.
    FenceNotIncreasing {
        /// The earlier grant.
        earlier: Box<Session>,
        /// The later grant.
        later: Box<Session>,
    },
}

impl Violation {
    /// A short name for counting: `overlap`, `stale-write`, `lost-update`, `leaked`, `fence`.
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
            Violation::Leaked(_) => "leaked",
            Violation::FenceNotIncreasing { .. } => "fence",
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Overlap { first, second } => write!(
                f,
                "overlap on {:?}:\n  first:  {first}\n  second: {second}",
                first.resource
            ),
            Violation::StaleWrite { session } => {
                write!(
                    f,
                    "write after validity on {:?}:\n  {session}",
                    session.resource
                )
            }
            Violation::LostUpdate {
                resource,
                completed,
                indeterminate,
                value,
            } => write!(
                f,
                "lost update on {resource:?}: value {value}, but {completed} critical sections \
                 completed (+{indeterminate} indeterminate)"
            ),
            Violation::Leaked(leak) => write!(f, "leaked key {leak}"),
            Violation::FenceNotIncreasing { earlier, later } => write!(
                f,
                "fencing token did not increase on {:?}:\n  earlier: {earlier}\n  later:   {later}",
                earlier.resource
            ),
        }
    }
}

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

/// Checks a history against the protected values (`resource` → value read
/// after the run) and the lock keys found after the run plus the max TTL.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use std::time::Duration;
/// use redquorum_harness::{check, Session};
///
/// let ms = Duration::from_millis;
/// let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
/// let b = Session::granted(1, "r", "b", ms(50), ms(60), ms(200)); // granted inside a's window
/// let values = BTreeMap::from([("r".to_owned(), 2)]);
/// let verdict = check(&[a, b], &values, &[]);
/// assert_eq!(verdict.count("overlap"), 1);
/// ```
#[must_use]
pub fn check(
    sessions: &[Session],
    protected: &BTreeMap<String, i64>,
    leaked: &[LeakedKey],
) -> Verdict {
    let mut violations = Vec::new();
    let mut by_resource: BTreeMap<&str, Vec<&Session>> = BTreeMap::new();
    for s in sessions {
        by_resource.entry(&s.resource).or_default().push(s);
    }
    for (resource, list) in &by_resource {
        let mut granted: Vec<&Session> =
            list.iter().copied().filter(|s| s.grant.is_some()).collect();
        granted.sort_by_key(|s| s.grant);
        check_overlaps(&granted, &mut violations);
        check_fences(&granted, &mut violations);
        for s in &granted {
            if let (Some(write), Some(end)) = (s.write_start, s.validity_end) {
                if write > end {
                    violations.push(Violation::StaleWrite {
                        session: Box::new((*s).clone()),
                    });
                }
            }
        }
        let completed = list
            .iter()
            .filter(|s| s.outcome == Outcome::Completed)
            .count() as u64;
        let indeterminate = list
            .iter()
            .filter(|s| matches!(s.outcome, Outcome::Indeterminate(_)))
            .count() as u64;
        let value = protected.get(*resource).copied().unwrap_or(0);
        let in_range =
            u64::try_from(value).is_ok_and(|v| v >= completed && v <= completed + indeterminate);
        if !in_range {
            violations.push(Violation::LostUpdate {
                resource: (*resource).to_owned(),
                completed,
                indeterminate,
                value,
            });
        }
    }
    // A protected value for a resource nobody completed must still be zero.
    for (resource, value) in protected {
        if !by_resource.contains_key(resource.as_str()) && *value != 0 {
            violations.push(Violation::LostUpdate {
                resource: resource.clone(),
                completed: 0,
                indeterminate: 0,
                value: *value,
            });
        }
    }
    violations.extend(leaked.iter().cloned().map(Violation::Leaked));
    Verdict { violations }
}

/// Sweep in grant order, keeping the window that reaches furthest so far.
fn check_overlaps(granted: &[&Session], violations: &mut Vec<Violation>) {
    let mut reach: Option<(&Session, std::time::Duration)> = None;
    for s in granted {
        let (Some(grant), Some(until)) = (s.grant, s.exclusive_until()) else {
            continue;
        };
        if let Some((holder, end)) = reach {
            if grant < end {
                violations.push(Violation::Overlap {
                    first: Box::new(holder.clone()),
                    second: Box::new((*s).clone()),
                });
            }
        }
        if reach.is_none_or(|(_, end)| until > end) {
            reach = Some((s, until));
        }
    }
}

fn check_fences(granted: &[&Session], violations: &mut Vec<Violation>) {
    let fenced: Vec<&&Session> = granted.iter().filter(|s| s.fence.is_some()).collect();
    for pair in fenced.windows(2) {
        if pair[1].fence <= pair[0].fence {
            violations.push(Violation::FenceNotIncreasing {
                earlier: Box::new((*pair[0]).clone()),
                later: Box::new((*pair[1]).clone()),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn values(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    #[test]
    fn sequential_holders_with_matching_value_pass() {
        let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        let b = Session::granted(1, "r", "b", ms(50), ms(100), ms(200));
        let verdict = check(&[a, b], &values(&[("r", 2)]), &[]);
        assert!(verdict.is_ok(), "{:?}", verdict.violations);
    }

    #[test]
    fn grant_inside_an_earlier_window_is_an_overlap_naming_both_sessions() {
        let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        let b = Session::granted(1, "r", "b", ms(10), ms(99), ms(200));
        let verdict = check(&[b.clone(), a.clone()], &values(&[("r", 2)]), &[]);
        assert_eq!(
            verdict.violations,
            vec![Violation::Overlap {
                first: Box::new(a),
                second: Box::new(b)
            }]
        );
    }

    #[test]
    fn an_early_release_ends_the_window() {
        let mut a = Session::granted(0, "r", "a", ms(0), ms(1), ms(1000));
        a.release = Some(ms(20));
        let b = Session::granted(1, "r", "b", ms(10), ms(20), ms(900));
        assert!(check(&[a, b], &values(&[("r", 2)]), &[]).is_ok());
    }

    #[test]
    fn different_resources_never_overlap() {
        let a = Session::granted(0, "r1", "a", ms(0), ms(1), ms(100));
        let b = Session::granted(1, "r2", "b", ms(0), ms(1), ms(100));
        assert!(check(&[a, b], &values(&[("r1", 1), ("r2", 1)]), &[]).is_ok());
    }

    #[test]
    fn a_value_below_the_completed_count_is_a_lost_update() {
        let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        let b = Session::granted(1, "r", "b", ms(0), ms(100), ms(200));
        let verdict = check(&[a, b], &values(&[("r", 1)]), &[]);
        assert_eq!(verdict.count("lost-update"), 1);
        assert_eq!(verdict.violations.len(), 1);
    }

    #[test]
    fn indeterminate_writes_widen_the_accepted_range() {
        let a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        let mut b = Session::granted(1, "r", "b", ms(0), ms(100), ms(200));
        b.outcome = Outcome::Indeterminate("io".into());
        assert!(check(&[a.clone(), b.clone()], &values(&[("r", 1)]), &[]).is_ok());
        assert!(check(&[a.clone(), b.clone()], &values(&[("r", 2)]), &[]).is_ok());
        assert_eq!(
            check(&[a, b], &values(&[("r", 3)]), &[]).count("lost-update"),
            1
        );
    }

    #[test]
    fn a_value_without_sessions_must_be_zero() {
        assert_eq!(
            check(&[], &values(&[("r", 1)]), &[]).count("lost-update"),
            1
        );
        assert!(check(&[], &values(&[("r", 0)]), &[]).is_ok());
    }

    #[test]
    fn a_write_after_validity_is_stale() {
        let mut a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        a.write_start = Some(ms(150));
        a.write_end = Some(ms(151));
        let verdict = check(&[a], &values(&[("r", 1)]), &[]);
        assert_eq!(verdict.count("stale-write"), 1);
    }

    #[test]
    fn fences_must_strictly_increase_in_grant_order() {
        let mut a = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        let mut b = Session::granted(1, "r", "b", ms(0), ms(100), ms(200));
        a.fence = Some(5);
        b.fence = Some(5);
        let verdict = check(&[a.clone(), b.clone()], &values(&[("r", 2)]), &[]);
        assert_eq!(verdict.count("fence"), 1);
        b.fence = Some(6);
        assert!(check(&[a, b], &values(&[("r", 2)]), &[]).is_ok());
    }

    #[test]
    fn refused_sessions_count_for_nothing() {
        let a = Session::refused(0, "r", ms(0), "contended");
        assert!(check(&[a], &values(&[("r", 0)]), &[]).is_ok());
    }

    #[test]
    fn leaked_keys_are_reported() {
        let leak = LeakedKey {
            node: "n".into(),
            key: "lock:r".into(),
            pttl_ms: 5,
        };
        let verdict = check(&[], &BTreeMap::new(), std::slice::from_ref(&leak));
        assert_eq!(verdict.violations, vec![Violation::Leaked(leak)]);
    }

    /// Holders one after another, each granted at or after the previous window's end.
    fn sequential(gaps: &[(u64, u64)]) -> Vec<Session> {
        let mut t = 0;
        gaps.iter()
            .enumerate()
            .map(|(i, (gap, len))| {
                let grant = t + gap;
                t = grant + len;
                Session::granted(i, "r", &format!("o{i}"), ms(grant), ms(grant), ms(t))
            })
            .collect()
    }

    proptest! {
        #[test]
        fn sequential_histories_pass(gaps in proptest::collection::vec((0_u64..50, 1_u64..50), 0..40)) {
            let sessions = sequential(&gaps);
            let n = sessions.len() as i64;
            prop_assert!(check(&sessions, &values(&[("r", n)]), &[]).is_ok());
        }

        #[test]
        fn moving_any_grant_into_the_previous_window_is_caught(
            gaps in proptest::collection::vec((0_u64..50, 2_u64..50), 2..40),
            pick in any::<prop::sample::Index>(),
        ) {
            let mut sessions = sequential(&gaps);
            let i = 1 + pick.index(sessions.len() - 1);
            let previous_end = sessions[i - 1].exclusive_until().unwrap();
            sessions[i].grant = Some(previous_end - ms(1));
            let n = sessions.len() as i64;
            let verdict = check(&sessions, &values(&[("r", n)]), &[]);
            prop_assert_eq!(verdict.count("overlap"), 1);
        }
    }
}
