//! The lock-delay rule (Chubby's, Consul's): a hold that expired without
//! being released keeps its resource from being granted again for the
//! delay, so a vanished holder that may still be working is not joined by
//! a new one at once.
//!
//! From a history alone the checker can only be sure of the holds that
//! certainly expired unreleased, and only when nothing renewed them: a
//! session that never extended (and whose lock has no watchdog:
//! [`Session::renews_itself`]) whose
//! release started after the latest moment any node could have set the
//! hold plus the TTL at the fastest legal clock. Such a hold was set on a
//! quorum no earlier than the session's start, so every node of that quorum
//! blocks the resource until at least `start + (ttl + delay) × (1 − drift)`;
//! any later grant needs a quorum, which shares a node with it, so it
//! cannot come before that moment.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sharing;
use crate::evidence::{Holder, Session};

/// What a run's lock-delay promises, and what the checker must allow for.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{LockDelayRule, Session};
/// let ms = Duration::from_millis;
/// let rule = LockDelayRule { ttl: ms(1000), delay: ms(2000), max_apply: ms(100) };
/// let mut vanished = Session::granted(0, "r", "a", ms(0), ms(10), ms(990));
/// vanished.release = Some(ms(2500)); // long after the hold expired everywhere
/// assert!(rule.vanished(&vanished));
/// assert!(rule.blocked_until(&vanished) > ms(2900));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockDelayRule {
    /// The lock's TTL.
    pub ttl: Duration,
    /// The lock-delay.
    pub delay: Duration,
    /// The longest a node may take to apply an operation after the client
    /// sent it: the node timeout, plus the longest fault that holds traffic
    /// back (latency, stall, pause) when the nemesis injects one.
    pub max_apply: Duration,
}

/// The clock error the rule allows: the library's default drift factor
/// (1 %) and its fixed 2 ms, plus the nemesis's clock faults (at most a
/// hundredth of the TTL).
pub(crate) const DRIFT: f64 = 0.01;
pub(crate) const FIXED: Duration = Duration::from_millis(2);

impl LockDelayRule {
    /// Whether `session`'s hold certainly expired on every node before its
    /// release could arrive: it never extended, and its release started
    /// after the grant, plus the longest apply time, plus the TTL at the
    /// fastest legal node clock. A hold extended out of the history's
    /// sight (the lock's own renewal, or `redquorum exec`'s watchdog in its
    /// own process: `deadline_unseen`) is never judged: its extensions are
    /// not recorded, so its release may come late without it vanishing.
    #[must_use]
    pub fn vanished(&self, session: &Session) -> bool {
        let (Some(grant), Some(release)) = (session.grant, session.release) else {
            return false;
        };
        let renewable = session.holder == Holder::Extending
            || !session.extensions.is_empty()
            || session.renews_itself
            || session.deadline_unseen;
        !renewable && release > self.latest_expiry(grant)
    }

    /// The latest a hold granted at `grant` can expire on any node: the
    /// grant, plus the longest apply time, plus the TTL at the fastest
    /// legal node clock.
    fn latest_expiry(&self, grant: Duration) -> Duration {
        grant + self.max_apply + self.ttl.mul_f64(1.0 + DRIFT) + FIXED
    }

    /// The earliest a later grant may come after `session` vanished: its
    /// hold was set no earlier than its start, and blocks for TTL + delay,
    /// less the clock error.
    #[must_use]
    pub fn blocked_until(&self, session: &Session) -> Duration {
        let blocked = (self.ttl + self.delay).mul_f64(1.0 - DRIFT);
        let slack = FIXED + self.ttl / 100;
        (session.start + blocked).saturating_sub(slack)
    }
}

/// Per resource (`granted` sorted by grant): each session granted after a
/// vanished one and before its [`blocked_until`](LockDelayRule::blocked_until),
/// as `(vanished, early)` pairs. A hold that may share with the vanished
/// one (another reader, permit or hold of its owner) could join it while it
/// was live: it counts only when granted after the vanished hold had
/// certainly expired everywhere.
pub(crate) fn early_grants<'a>(
    granted: &[&'a Session],
    rule: &LockDelayRule,
) -> Vec<(&'a Session, &'a Session)> {
    let mut found = Vec::new();
    for (i, gone) in granted.iter().enumerate() {
        if !rule.vanished(gone) {
            continue;
        }
        let until = rule.blocked_until(gone);
        let expired = gone.grant.map(|g| rule.latest_expiry(g));
        found.extend(
            granted[i + 1..]
                .iter()
                .take_while(|next| next.grant.is_some_and(|g| g < until))
                .filter(|next| !sharing::may_share(gone, next) || next.grant > expired)
                .map(|next| (*gone, *next)),
        );
    }
    found
}

/// How many sessions of `sessions` certainly vanished (a run that has none
/// has not tested the lock-delay).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{vanished_holders, LockDelayRule, Session};
/// let ms = Duration::from_millis;
/// let rule = LockDelayRule { ttl: ms(1000), delay: ms(1000), max_apply: ms(100) };
/// let mut clean = Session::granted(0, "r", "a", ms(0), ms(10), ms(990));
/// clean.release = Some(ms(50));
/// assert_eq!(vanished_holders(&[clean], &rule), 0);
/// ```
#[must_use]
pub fn vanished_holders(sessions: &[Session], rule: &LockDelayRule) -> usize {
    sessions.iter().filter(|s| rule.vanished(s)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    const RULE: LockDelayRule = LockDelayRule {
        ttl: Duration::from_millis(1000),
        delay: Duration::from_millis(2000),
        max_apply: Duration::from_millis(100),
    };

    fn session(owner: &str, start: u64, grant: u64, release: u64) -> Session {
        let mut s = Session::granted(0, "r", owner, ms(start), ms(grant), ms(grant + 980));
        s.release = Some(ms(release));
        s
    }

    #[test]
    fn a_release_before_the_latest_expiry_is_clean_and_blocks_nothing() {
        let clean = session("a", 0, 10, 1000);
        let next = session("b", 1000, 1010, 1100);
        assert!(!RULE.vanished(&clean));
        assert!(early_grants(&[&clean, &next], &RULE).is_empty());
    }

    #[test]
    fn a_grant_inside_the_delay_after_a_vanished_holder_is_early() {
        let gone = session("a", 0, 10, 2000);
        let early = session("b", 1100, 1200, 1300);
        let after = session("c", 2950, 2980, 3000);
        assert!(RULE.vanished(&gone));
        let found = early_grants(&[&gone, &early, &after], &RULE);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1.owner, "b");
    }

    #[test]
    fn a_reader_joining_a_vanished_reader_while_it_held_is_not_early_but_one_after_it_expired_is() {
        let reader = |owner: &str, start: u64, grant: u64, release: u64| {
            let mut s = session(owner, start, grant, release);
            s.share = Some(crate::evidence::Share::Readers);
            s
        };
        let gone = reader("a", 0, 10, 2500);
        let joined = reader("b", 300, 400, 600);
        let late = reader("c", 1150, 1200, 1300);
        let writer = session("d", 1150, 1250, 1300);
        assert!(RULE.vanished(&gone));
        let found = early_grants(&[&gone, &joined, &late, &writer], &RULE);
        let owners: Vec<&str> = found
            .iter()
            .map(|(_, early)| early.owner.as_str())
            .collect();
        assert_eq!(owners, ["c", "d"]);
    }

    #[test]
    fn holds_the_lock_renews_by_itself_are_never_judged() {
        let mut leader = session("a", 0, 10, 5000);
        leader.renews_itself = true;
        assert!(!RULE.vanished(&leader));
    }

    #[test]
    fn holds_extended_out_of_sight_are_never_judged() {
        let mut exec = session("a", 0, 10, 5000);
        assert!(RULE.vanished(&exec));
        exec.deadline_unseen = true;
        assert!(!RULE.vanished(&exec));
    }

    #[test]
    fn extending_holders_are_never_judged() {
        let mut extending = session("a", 0, 10, 5000);
        extending.holder = Holder::Extending;
        assert!(!RULE.vanished(&extending));
    }

    proptest::proptest! {
        /// The bound is sound for every start and grant: a later grant at or
        /// after start + (ttl + delay) is never called early.
        #[test]
        fn a_grant_after_ttl_plus_delay_is_never_early(start in 0_u64..10_000, wait in 0_u64..1000, gap in 0_u64..1000) {
            let gone = session("a", start, start + wait, start + wait + 3000);
            let at = start + 3000 + gap;
            let next = session("b", at, at, at + 10);
            proptest::prop_assert!(early_grants(&[&gone, &next], &RULE).is_empty());
        }
    }
}
