//! The client population of the default run: each client group builds the
//! library its own way, side by side on the same names, as the services
//! sharing a set of nodes do: the library's defaults (no `max_ttl`), the
//! delayed-restart rule, owner information with a lock-delay, a shorter TTL
//! with a longer node timeout. The report gives a row per configuration.
//!
//! Why each stays within the assumptions: every lease is at most the run's
//! TTL, and every configuration refuses a node or a cluster shard whose
//! holds may be lost for at least the run's TTL (its `max_ttl`, or the TTL
//! when `max_ttl` is unset), so no group counts a vote that may lack
//! another group's live hold. The local nodes of the default run persist
//! every write before answering (AOF `always`, `args.rs`), so a kill loses
//! no acknowledged hold and the groups without `max_ttl` may count a
//! restarted node at once. The checker's rules that use the run's TTL (the
//! clock error of `hold-removed`, the orphan slack, the leak wait) allow
//! for the longest lease, which is the run's.

use std::time::Duration;

use redquorum::{LockOptions, OwnerInfo, Redlock};

use super::lock::{Lock, Plan};

/// How one client group builds its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setup {
    /// The library's defaults, but the run's TTL and wait: no `max_ttl`,
    /// its node timeout, retry pause and jitter.
    Defaults,
    /// The delayed-restart rule (`max_ttl` = TTL) and quick retries.
    MaxTtl,
    /// Owner information on every hold and a lock-delay of a quarter of
    /// the TTL (its `max_ttl` the TTL plus the delay).
    OwnerInfo,
    /// Three quarters of the TTL, two and a half times the node timeout,
    /// `max_ttl` the run's TTL (the longest lease any group holds).
    ShortTtl,
}

/// The setups of the default run, group `g` taking `SETUPS[g % 4]`.
pub(crate) const SETUPS: [Setup; 4] = [
    Setup::Defaults,
    Setup::MaxTtl,
    Setup::OwnerInfo,
    Setup::ShortTtl,
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
        let ttl = plan.ttl;
        match self {
            Setup::Defaults => format!("defaults: ttl {} ms, no max_ttl", ms(ttl)),
            Setup::MaxTtl => format!("max_ttl {} ms", ms(ttl)),
            Setup::OwnerInfo => format!(
                "owner info, lock-delay {} ms, max_ttl {} ms",
                ms(ttl / 4),
                ms(ttl + ttl / 4)
            ),
            Setup::ShortTtl => format!(
                "ttl {} ms, node timeout {} ms, max_ttl {} ms",
                ms(ttl * 3 / 4),
                ms(plan.node_timeout * 5 / 2),
                ms(ttl)
            ),
        }
    }

    /// Its lease.
    fn ttl(self, plan: &Plan) -> Duration {
        match self {
            Setup::ShortTtl => plan.ttl * 3 / 4,
            _ => plan.ttl,
        }
    }

    /// Its delayed-restart rule (`None`: the library's default, off). A
    /// shorter lease's refusals must still cover the other groups' leases.
    fn max_ttl(self, plan: &Plan) -> Option<Duration> {
        match self {
            Setup::Defaults => None,
            Setup::MaxTtl | Setup::ShortTtl => Some(plan.ttl),
            Setup::OwnerInfo => Some(plan.ttl + plan.ttl / 4),
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
            Setup::ShortTtl => builder.node_timeout(plan.node_timeout * 5 / 2),
        };
        let builder = match self.max_ttl(plan) {
            Some(max_ttl) => builder.max_ttl(max_ttl),
            None => builder,
        };
        let redlock = builder.build().map_err(|e| e.to_string())?;
        Ok(match self {
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

/// Whether the run's groups are a population: the mixed default run,
/// without the options whose checks hold every client to one configuration
/// (a lock-delay, a fast node, an operator).
pub(crate) fn runs(plan: &Plan) -> bool {
    plan.lock == Lock::Mixed
        && plan.lock_delay.is_zero()
        && plan.fast_node.is_none()
        && plan.operator.is_idle()
}

#[cfg(test)]
mod tests {
    use redquorum_benches::LockKind;

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

    /// Every lease is at most the run's TTL, and every setup refuses a
    /// node that may have lost holds (its `max_ttl`, else its TTL) for at
    /// least the longest lease of any setup: the premise that keeps the
    /// population within the assumptions.
    #[tokio::test]
    async fn every_refusal_covers_every_lease() {
        let plan = Plan::new(Lock::Mixed);
        let longest = SETUPS.iter().map(|s| s.ttl(&plan)).max().unwrap();
        assert_eq!(longest, plan.ttl);
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
