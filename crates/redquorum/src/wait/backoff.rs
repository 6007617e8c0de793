//! Jittered delay between `lock()` attempts, so contenders do not retry in step.

use std::time::Duration;

/// `base + uniform[0, jitter)`.
pub(crate) fn retry_delay(base: Duration, jitter: Duration) -> Duration {
    base + jitter.mul_f64(rand::random::<f64>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn retry_delay_stays_within_base_and_base_plus_jitter(base in 0u64..10_000, jitter in 0u64..10_000) {
            let (base, jitter) = (Duration::from_millis(base), Duration::from_millis(jitter));
            let d = retry_delay(base, jitter);
            prop_assert!(d >= base);
            prop_assert!(d <= base + jitter);
        }
    }
}
