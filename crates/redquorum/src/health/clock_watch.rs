//! Node clock monitoring. Redlock's safety assumes that a node's clock, which
//! expires its keys, advances at the rate of real time (within the drift
//! allowance). Each health probe reads the node's clock (`server_time_usec`
//! in `INFO`) between two readings of the local monotonic clock; between two
//! probes the node's clock must have advanced as much as the local one did,
//! within the drift allowance and the two probes' round trips. A node whose
//! clock jumped, stopped or ran fast or slow loses its vote until it has
//! been stable for the longest lease (`max_ttl`, else the ttl): a key it
//! granted while its clock misbehaved may expire early, and after that long
//! every such key has expired anyway (the reasoning of the delayed-restart
//! rule).

use std::time::{Duration, Instant};

use crate::health::ineligible::Ineligible;

/// Below this the allowance never goes: Redis reports microseconds, NTP may
/// slew a clock by 0.05 %, and a drift factor of 0 must not flag those.
const MIN_RATE_ALLOWANCE: f64 = 0.001;
const ROUNDING: Duration = Duration::from_millis(2);

/// One reading of a node's clock, taken between `sent` and `answered`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClockSample {
    pub(crate) sent: Instant,
    pub(crate) answered: Instant,
    /// The node's clock, in µs since the Unix epoch.
    pub(crate) node_us: i64,
}

/// What the clock readings of one node showed.
#[derive(Debug, Default)]
pub(crate) struct ClockWatch {
    last: Option<ClockSample>,
    /// The last misbehaviour seen, and when.
    fault: Option<(Instant, Ineligible)>,
}

impl ClockWatch {
    /// Records `sample`; returns the fault it shows against the previous
    /// sample, if any.
    pub(crate) fn record(&mut self, sample: ClockSample, drift_factor: f64) -> Option<Ineligible> {
        let Some(previous) = self.last else {
            self.last = Some(sample);
            return None;
        };
        // Two probes in flight at once (the first one and a reconnection's)
        // can be recorded in either order: readings whose round trips
        // overlap are not ordered, so they are not compared.
        if sample.sent < previous.answered {
            if sample.answered > previous.answered {
                self.last = Some(sample);
            }
            return None;
        }
        self.last = Some(sample);
        let node_ms = (sample.node_us - previous.node_us) / 1000;
        // The node read its clock somewhere inside each round trip.
        let shortest = sample.sent.saturating_duration_since(previous.answered);
        let longest = sample.answered.saturating_duration_since(previous.sent);
        let rate = drift_factor.max(MIN_RATE_ALLOWANCE);
        let low = shortest.mul_f64(1.0 - rate).saturating_sub(ROUNDING);
        let high = longest.mul_f64(1.0 + rate) + ROUNDING;
        let in_range = u64::try_from(node_ms)
            .is_ok_and(|ms| (low.as_millis()..=high.as_millis()).contains(&u128::from(ms)));
        if in_range {
            return None;
        }
        let fault = Ineligible::ClockUnstable {
            node_ms,
            local_ms: u64::try_from(longest.as_millis()).unwrap_or(u64::MAX),
        };
        self.fault = Some((sample.answered, fault.clone()));
        Some(fault)
    }

    /// The last fault, while the node has not been stable for `stable_for`.
    pub(crate) fn refusal(&self, stable_for: Duration, now: Instant) -> Option<Ineligible> {
        let (at, fault) = self.fault.as_ref()?;
        (now.saturating_duration_since(*at) < stable_for).then(|| fault.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(base: Instant, local_ms: u64, rtt_ms: u64, node_ms: i64) -> ClockSample {
        let sent = base + Duration::from_millis(local_ms);
        ClockSample {
            sent,
            answered: sent + Duration::from_millis(rtt_ms),
            node_us: 1_700_000_000_000_000 + node_ms * 1000,
        }
    }

    #[test]
    fn a_fast_a_stopped_and_a_jumping_clock_are_faults_until_stable_for_the_longest_lease() {
        let base = Instant::now();
        for node_after_5s in [10_000, 5_000 - 200, 0, -3_000, 5_000 + 60_000] {
            let mut watch = ClockWatch::default();
            assert!(watch.record(sample(base, 0, 1, 0), 0.01).is_none());
            let fault = watch.record(sample(base, 5_000, 1, node_after_5s), 0.01);
            assert!(
                matches!(fault, Some(Ineligible::ClockUnstable { node_ms, .. }) if node_ms == node_after_5s),
                "{node_after_5s}: {fault:?}"
            );
            let at = base + Duration::from_millis(5_001);
            let stable_for = Duration::from_secs(10);
            assert!(
                watch
                    .refusal(stable_for, at + Duration::from_secs(9))
                    .is_some()
            );
            assert!(
                watch
                    .refusal(stable_for, at + Duration::from_secs(10))
                    .is_none()
            );
        }
    }

    #[test]
    fn a_later_good_sample_does_not_clear_a_fault_early() {
        let base = Instant::now();
        let mut watch = ClockWatch::default();
        watch.record(sample(base, 0, 1, 0), 0.01);
        watch.record(sample(base, 100, 1, 5_000), 0.01).unwrap();
        assert!(watch.record(sample(base, 200, 1, 5_100), 0.01).is_none());
        let soon = base + Duration::from_millis(300);
        assert!(watch.refusal(Duration::from_secs(1), soon).is_some());
    }

    #[test]
    fn readings_whose_round_trips_overlap_are_not_compared_in_either_order() {
        let base = Instant::now();
        // B was sent before A answered; B's reading is recorded first.
        let a = sample(base, 0, 10, 0);
        let b = sample(base, 2, 3, 4);
        let mut watch = ClockWatch::default();
        assert!(watch.record(b, 0.01).is_none());
        assert!(
            watch.record(a, 0.01).is_none(),
            "went backwards only by the order of recording"
        );
        // The next reading is compared with the latest answer (A's, at 10 ms).
        assert!(watch.record(sample(base, 1_000, 1, 1_000), 0.01).is_none());
        assert!(watch.record(sample(base, 2_000, 1, 5_000), 0.01).is_some());
    }

    proptest! {
        #[test]
        fn a_clock_within_the_drift_and_the_round_trips_is_never_a_fault(
            gap in 1u64..20_000,
            rtt_a in 0u64..200,
            rtt_b in 0u64..200,
            read_a in 0.0f64..=1.0,
            read_b in 0.0f64..=1.0,
            drift in -0.009f64..0.009,
        ) {
            // The node reads its clock at any point inside each round trip,
            // and runs up to 0.9 % fast or slow (the allowance is 1 %).
            let base = Instant::now();
            let a = sample(base, 0, rtt_a, 0);
            let b = sample(base, gap, rtt_b, 0);
            let at_a = rtt_a as f64 * read_a;
            let at_b = gap as f64 + rtt_b as f64 * read_b;
            let node_ms = ((at_b - at_a) * (1.0 + drift)).floor() as i64;
            let mut watch = ClockWatch::default();
            watch.record(ClockSample { node_us: 1_700_000_000_000_000 + (at_a * 1000.0) as i64, ..a }, 0.01);
            let b = ClockSample { node_us: 1_700_000_000_000_000 + ((at_a as i64 + node_ms) * 1000), ..b };
            prop_assert!(watch.record(b, 0.01).is_none());
        }
    }
}
