//! The client population of the default run: each client group builds the
//! library its own way, side by side on the same names, as the services
//! sharing a set of nodes do: the library's defaults (no `max_ttl`, and
//! no fencing token ever asked) with a longer TTL, the delayed-restart rule, owner information with a
//! lock-delay, a longer node timeout. The report gives a row per
//! configuration.
//!
//! Why each stays within the assumptions: every configuration refuses a
//! node or a cluster shard whose holds may be lost for at least the
//! longest lease of any (its `max_ttl`, or its TTL when `max_ttl` is
//! unset: so the one without it has the longest TTL), and no group counts
//! a vote that may lack another group's live hold. The local nodes of the
//! default run persist every write before answering (AOF `always`,
//! `args.rs`), so a kill loses no acknowledged hold and the group without
//! `max_ttl` may count a restarted node at once. No lease is shorter than
//! the run's TTL, which the key audit counts a key's age from (TTL less
//! time left): a shorter one would look older than it is, and its keys
//! orphans; a longer one looks younger, which only weakens the orphan
//! rule for it. The leak wait (the TTL plus 3 s) outlasts every lease.

use std::time::Duration;

use redquorum::{LockOptions, OwnerInfo, Redlock, WatchdogOptions};

use super::lock::{Lock, Plan};

/// How one client group builds its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setup {
    /// The library's defaults but for the TTL (five quarters of the run's:
    /// the longest lease, which its refusals must cover without `max_ttl`)
    /// and wait: no `max_ttl`, its node timeout, retry pause and jitter;
    /// and no holder asks for a fencing token, as most users never do, so
    /// its handle never proposes one and its plain acquires alone in their
    /// call go as `SET NX PX` (`protocol/native.rs`).
    Defaults,
    /// The delayed-restart rule (`max_ttl` the longest lease), quick
    /// retries, and a watchdog tuned to extend less often: with a fifth of
    /// the TTL left (the default: a third), so an extension a fault holds
    /// back lands nearer the hold's expiry, or after it.
    MaxTtl,
    /// Owner information on every hold and a lock-delay of a quarter of
    /// the TTL (its `max_ttl` the longest lease plus the delay).
    OwnerInfo,
    /// Two and a half times the node timeout, `max_ttl` the longest lease.
    SlowCalls,
}

/// The setups of the default run, group `g` taking `SETUPS[g % 4]`.
pub(crate) const SETUPS: [Setup; 4] = [
    Setup::Defaults,
    Setup::MaxTtl,
    Setup::OwnerInfo,
    Setup::SlowCalls,
];

impl Setup {
    /// Group `group`'s setup: from [`SETUPS`] in a population run, none
    /// otherwise (every group alike, `lock::redlock`).
    pub(crate) fn of(plan: &Plan, group: usize) -> Option<Setup> {
        runs(plan).then(|| SETUPS[group % SETUPS.len()])
    }

    /// The report's label.
    pub(crate) fn label(self, plan: &Plan) -> String {
        let ms = |d: Duration| d.as_millis();
        let ttl = format!("ttl {} ms", ms(self.ttl(plan)));
        let max_ttl = self
            .max_ttl(plan)
            .map_or("no max_ttl".to_owned(), |m| format!("max_ttl {} ms", ms(m)));
        match self {
            Setup::Defaults => format!("defaults: {ttl}, {max_ttl}, no tokens asked"),
            Setup::MaxTtl => format!(
                "{ttl}, {max_ttl}, watchdog at {} ms left",
                ms(late_watchdog(plan).extend_before.unwrap_or_default())
            ),
            Setup::OwnerInfo => format!(
                "owner info, lock-delay {} ms, {ttl}, {max_ttl}",
                ms(plan.ttl / 4)
            ),
            Setup::SlowCalls => format!(
                "node timeout {} ms, {ttl}, {max_ttl}",
                ms(plan.node_timeout * 5 / 2)
            ),
        }
    }

    /// Whether its holders ask for fencing tokens (the mix's own choice
    /// per kind, `redquorum_adapter::MixedLocker`), or none ever does.
    pub(crate) fn asks_tokens(self) -> bool {
        self != Setup::Defaults
    }

    /// Its lease: the run's TTL, or the longest lease of the population.
    pub(crate) fn ttl(self, plan: &Plan) -> Duration {
        match self {
            Setup::Defaults => longest_lease(plan),
            _ => plan.ttl,
        }
    }

    /// Its delayed-restart rule (`None`: the library's default, off). A
    /// shorter lease's refusals must still cover the other groups' leases.
    fn max_ttl(self, plan: &Plan) -> Option<Duration> {
        match self {
            Setup::Defaults => None,
            Setup::MaxTtl | Setup::SlowCalls => Some(longest_lease(plan)),
            Setup::OwnerInfo => Some(longest_lease(plan) + plan.ttl / 4),
        }
    }

    /// The lock this setup builds on `urls`, its keys under `prefix`.
    pub(crate) fn redlock(
        self,
        plan: &Plan,
        urls: Vec<String>,
        prefix: &str,
    ) -> Result<Redlock, String> {
        let ttl = self.ttl(plan);
        let builder = Redlock::builder()
            .nodes(urls)
            .ttl(ttl)
            .wait(ttl / 2)
            .key_prefix(prefix.to_owned());
        let builder = match self {
            Setup::Defaults => builder,
            Setup::MaxTtl => builder
                .node_timeout(plan.node_timeout)
                .retry_delay(Duration::from_millis(5))
                .retry_jitter(Duration::from_millis(20)),
            Setup::OwnerInfo => builder.node_timeout(plan.node_timeout),
            Setup::SlowCalls => builder.node_timeout(plan.node_timeout * 5 / 2),
        };
        let builder = match self.max_ttl(plan) {
            Some(max_ttl) => builder.max_ttl(max_ttl),
            None => builder,
        };
        let redlock = builder.build().map_err(|e| e.to_string())?;
        Ok(match self {
            Setup::MaxTtl => redlock
                .with_watchdog(&late_watchdog(plan))
                .map_err(|e| e.to_string())?,
            Setup::OwnerInfo => redlock
                .with_options(&LockOptions {
                    lock_delay: plan.ttl / 4,
                    ..*redlock.options()
                })
                .map_err(|e| e.to_string())?
                .with_owner_info(OwnerInfo::here("torture")),
            _ => redlock,
        })
    }
}

/// The `MaxTtl` group's watchdog: it extends with a fifth of the TTL left.
fn late_watchdog(plan: &Plan) -> WatchdogOptions {
    WatchdogOptions {
        extend_before: Some(plan.ttl / 5),
        ..WatchdogOptions::default()
    }
}

/// The longest lease of the population: five quarters of the run's TTL;
/// the run's TTL when its groups are alike (not a population).
pub(crate) fn longest_lease(plan: &Plan) -> Duration {
    if runs(plan) {
        plan.ttl * 5 / 4
    } else {
        plan.ttl
    }
}

/// Whether the run's groups are a population: the mixed default run,
/// without the options whose checks hold every client to one configuration
/// (a lock-delay, a fast node, an operator's pace asked for). The default
/// run's own operator (an inspection every 200 ms, a force-release every 5 s)
/// runs beside the population: its checks take no client's TTL or delay.
pub(crate) fn runs(plan: &Plan) -> bool {
    plan.lock == Lock::Mixed
        && plan.lock_delay.is_zero()
        && plan.fast_node.is_none()
        && (plan.operator.is_idle() || plan.operator.by_default)
}

#[cfg(test)]
mod tests {
    use redquorum_adapter::LockKind;

    use super::*;

    #[test]
    fn only_the_plain_mixed_run_is_a_population() {
        let mixed = Plan::new(Lock::Mixed);
        assert!(runs(&mixed));
        assert_eq!(Setup::of(&mixed, 5), Some(Setup::MaxTtl));
        let delayed = Plan {
            lock_delay: Duration::from_millis(500),
            ..Plan::new(Lock::Mixed)
        };
        assert!(!runs(&delayed));
        assert_eq!(Setup::of(&Plan::new(Lock::One(LockKind::Plain)), 0), None);
    }

    /// Every setup refuses a node that may have lost holds (its
    /// `max_ttl`, else its TTL) for at least the longest lease of any
    /// setup: the premise that keeps the population within the
    /// assumptions. No lease is shorter than the run's TTL, from which the
    /// key audit counts ages, and the leak wait outlasts every lease.
    #[tokio::test]
    async fn every_refusal_covers_every_lease() {
        let plan = Plan::new(Lock::Mixed);
        let longest = SETUPS.iter().map(|s| s.ttl(&plan)).max().unwrap();
        let shortest = SETUPS.iter().map(|s| s.ttl(&plan)).min().unwrap();
        assert_eq!((longest, shortest), (longest_lease(&plan), plan.ttl));
        assert!(longest < plan.ttl + Duration::from_secs(3));
        for setup in SETUPS {
            let label = setup.label(&plan);
            let refusal = setup.max_ttl(&plan).unwrap_or(setup.ttl(&plan));
            assert!(refusal >= longest, "{label}");
            let urls = vec!["redis://127.0.0.1:1".to_owned()];
            let redlock = setup.redlock(&plan, urls, "t:").expect(&label);
            assert_eq!(redlock.options().ttl, setup.ttl(&plan), "{label}");
        }
        assert_eq!(Setup::Defaults.max_ttl(&plan), None);
    }
}
