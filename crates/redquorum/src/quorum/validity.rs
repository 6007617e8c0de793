//! Pure maths of the lease: `validity = ttl - elapsed - drift`.
//!
//! `drift = ttl * drift_factor + 2 ms` accounts for clocks running at
//! slightly different rates on the client and the nodes (the Redlock paper's
//! clock-drift term plus a small constant for timer granularity).

use std::time::Duration;

/// Fixed part of the drift allowance, for timer granularity.
const DRIFT_FLOOR: Duration = Duration::from_millis(2);

/// The clock-drift allowance for a lease of `ttl`.
pub(crate) fn drift(ttl: Duration, drift_factor: f64) -> Duration {
    ttl.mul_f64(drift_factor) + DRIFT_FLOOR
}

/// How long a lease granted `elapsed` after its first send may still be used,
/// or `None` when nothing is left (the quorum came too late).
pub(crate) fn validity(ttl: Duration, elapsed: Duration, drift_factor: f64) -> Option<Duration> {
    ttl.checked_sub(elapsed)?
        .checked_sub(drift(ttl, drift_factor))
        .filter(|left| !left.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn validity_subtracts_elapsed_and_drift() {
        let ttl = Duration::from_secs(10);
        // drift = 100 ms + 2 ms
        assert_eq!(
            validity(ttl, Duration::from_millis(50), 0.01),
            Some(Duration::from_millis(10_000 - 50 - 102))
        );
    }

    #[test]
    fn validity_is_none_when_the_quorum_came_too_late() {
        let ttl = Duration::from_millis(100);
        assert_eq!(validity(ttl, Duration::from_millis(97), 0.01), None);
        assert_eq!(validity(ttl, Duration::from_millis(200), 0.01), None);
        // exactly zero left is not a lease
        assert!(validity(ttl, Duration::from_millis(98), 0.01).is_none());
        assert_eq!(
            validity(ttl, Duration::from_millis(96), 0.01),
            Some(Duration::from_millis(1))
        );
    }

    proptest! {
        #[test]
        fn validity_never_exceeds_ttl_minus_drift(
            ttl_ms in 1u64..1_000_000,
            elapsed_ms in 0u64..2_000_000,
            factor in 0.0f64..0.5,
        ) {
            let ttl = Duration::from_millis(ttl_ms);
            let elapsed = Duration::from_millis(elapsed_ms);
            match validity(ttl, elapsed, factor) {
                Some(v) => {
                    prop_assert!(v > Duration::ZERO);
                    prop_assert!(v + elapsed + drift(ttl, factor) == ttl);
                }
                None => prop_assert!(elapsed + drift(ttl, factor) >= ttl),
            }
        }

        #[test]
        fn validity_shrinks_as_time_passes(
            ttl_ms in 1u64..100_000,
            a in 0u64..100_000,
            b in 0u64..100_000,
        ) {
            let ttl = Duration::from_millis(ttl_ms);
            let (early, late) = (a.min(b), a.max(b));
            let v_early = validity(ttl, Duration::from_millis(early), 0.01);
            let v_late = validity(ttl, Duration::from_millis(late), 0.01);
            prop_assert!(v_late <= v_early);
        }
    }
}
