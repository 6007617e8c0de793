//! When `exec` extends the lease, when it stops the command, and when it
//! kills it: the timing that keeps the command inside its lease.
//!
//! The watchdog extends when half the TTL is left. If that keeps failing,
//! the lease is *at risk* once less than the stop margin is left (default a
//! quarter of the TTL): `exec` sends SIGTERM then, and SIGKILL `kill_after`
//! later (default half the margin). The kill must land a slack before the
//! validity ends, since after that another holder may be granted.

use std::time::{Duration, Instant};

use redquorum::WatchdogOptions;

/// Time kept between SIGKILL and the end of the validity, for the at-risk
/// timer to fire late on a busy machine, the process tree to be walked, and
/// the kernel to end the killed processes.
pub(crate) const KILL_SLACK: Duration = Duration::from_millis(100);

/// The checked timing of one `exec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StopPlan {
    /// Extend when this much validity is left: half the TTL.
    pub(crate) extend_before: Duration,
    /// At risk (stop the command) when less than this is left.
    pub(crate) stop_margin: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub(crate) kill_after: Duration,
}

impl StopPlan {
    /// The plan for `ttl`, with the user's `--stop-margin` and `--kill-after`
    /// if given; an error message when they do not fit together.
    pub(crate) fn new(
        ttl: Duration,
        stop_margin: Option<Duration>,
        kill_after: Option<Duration>,
    ) -> Result<Self, String> {
        let extend_before = ttl / 2;
        let (stop_margin, margin_from) = match stop_margin {
            Some(margin) => (margin, "--stop-margin"),
            None => (ttl / 4, "the stop margin (a quarter of --ttl)"),
        };
        if stop_margin.is_zero() || stop_margin >= extend_before {
            return Err(format!(
                "{margin_from} {} must be above zero and below half of --ttl {} ({}), \
                 where the lease is extended",
                fmt(stop_margin),
                fmt(ttl),
                fmt(extend_before)
            ));
        }
        let (kill_after, kill_from) = match kill_after {
            Some(kill_after) => (kill_after, "--kill-after"),
            None => (stop_margin / 2, "--kill-after (half the stop margin)"),
        };
        if kill_after + KILL_SLACK > stop_margin {
            return Err(format!(
                "{kill_from} {} plus {} for SIGKILL to land does not fit in {margin_from} {}: \
                 the command must be dead before the lease ends; \
                 use a longer --ttl or --stop-margin, or a shorter --kill-after",
                fmt(kill_after),
                fmt(KILL_SLACK),
                fmt(stop_margin)
            ));
        }
        Ok(Self {
            extend_before,
            stop_margin,
            kill_after,
        })
    }

    /// The watchdog settings that carry out this plan.
    pub(crate) fn watchdog(&self) -> WatchdogOptions {
        WatchdogOptions {
            extend_before: Some(self.extend_before),
            stop_margin: Some(self.stop_margin),
            ..WatchdogOptions::default()
        }
    }

    /// When to SIGKILL after SIGTERM was sent at `now`: `kill_after` later,
    /// but never later than [`KILL_SLACK`] before `deadline` (the risk may
    /// have been seen late).
    pub(crate) fn kill_at(&self, now: Instant, deadline: Instant) -> Instant {
        let latest = deadline.checked_sub(KILL_SLACK).unwrap_or(deadline);
        (now + self.kill_after).min(latest)
    }
    /// When the tree is stopped if the lease's deadline stays `deadline`:
    /// SIGTERM the stop margin before it, SIGKILL by [`Self::kill_at`]. The
    /// guard keeps these (`stop_times.rs`) and acts on them by itself.
    pub(crate) fn stop_instants(&self, deadline: Instant) -> (Instant, Instant) {
        let term = deadline.checked_sub(self.stop_margin).unwrap_or(deadline);
        (term, self.kill_at(term, deadline))
    }
}

fn fmt(duration: Duration) -> humantime::FormattedDuration {
    humantime::format_duration(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn defaults_extend_at_half_stop_at_a_quarter_and_kill_at_an_eighth() {
        let plan = StopPlan::new(Duration::from_secs(10), None, None).unwrap();
        assert_eq!(plan.extend_before, ms(5000));
        assert_eq!(plan.stop_margin, ms(2500));
        assert_eq!(plan.kill_after, ms(1250));
        assert_eq!(plan.watchdog().stop_margin, Some(ms(2500)));
        assert_eq!(plan.watchdog().extend_before, Some(ms(5000)));
    }

    #[test]
    fn the_kill_must_fit_in_the_margin_and_the_margin_below_the_extension() {
        // The shortest TTL whose defaults fit: 800ms (margin 200ms, kill after 100ms).
        assert!(StopPlan::new(ms(800), None, None).is_ok());
        let short = StopPlan::new(ms(700), None, None).unwrap_err();
        assert!(short.contains("does not fit"), "{short}");
        let late_kill = StopPlan::new(ms(2000), None, Some(ms(401))).unwrap_err();
        assert!(late_kill.contains("--kill-after 401ms"), "{late_kill}");
        assert!(StopPlan::new(ms(2000), None, Some(ms(400))).is_ok());
        assert!(StopPlan::new(ms(2000), None, Some(Duration::ZERO)).is_ok());
        let wide = StopPlan::new(ms(2000), Some(ms(1000)), None).unwrap_err();
        assert!(wide.contains("below half of --ttl"), "{wide}");
        assert!(StopPlan::new(ms(2000), Some(Duration::ZERO), None).is_err());
        assert!(StopPlan::new(ms(2000), Some(ms(999)), Some(ms(800))).is_ok());
    }

    #[test]
    fn sigkill_comes_kill_after_the_sigterm_but_a_slack_before_the_deadline_at_the_latest() {
        let plan = StopPlan::new(Duration::from_secs(2), None, None).unwrap();
        let now = Instant::now();
        let roomy = now + Duration::from_secs(10);
        assert_eq!(plan.kill_at(now, roomy), now + ms(250));
        let late = now + ms(150);
        assert_eq!(plan.kill_at(now, late), now + ms(50));
        assert_eq!(
            plan.kill_at(now, now),
            now.checked_sub(KILL_SLACK).unwrap_or(now)
        );
    }

    #[test]
    fn the_guard_stops_the_tree_as_exec_would_at_the_margin_and_kills_it_kill_after_later() {
        let plan = StopPlan::new(Duration::from_secs(2), None, None).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let (term, kill) = plan.stop_instants(deadline);
        assert_eq!(deadline - term, ms(500));
        assert_eq!(kill - term, ms(250));
        assert!(kill + KILL_SLACK <= deadline);
    }
}
