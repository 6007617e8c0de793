//! Latency distributions (an HDR histogram per measure, so a long run does
//! not grow a vector of samples) and medians across repeats.

use std::time::Duration;

use hdrhistogram::Histogram;

/// A latency distribution: records durations in microseconds with three
/// significant digits (1 µs to an hour; longer ones are clamped).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let mut latencies = redquorum_benches::Latencies::default();
/// for us in 1..=100 {
///     latencies.record(Duration::from_micros(us));
/// }
/// assert_eq!(latencies.len(), 100);
/// assert_eq!(latencies.quantile_us(0.5), 50.0);
/// assert_eq!(latencies.quantile_us(0.99), 99.0);
/// ```
#[derive(Debug, Clone)]
pub struct Latencies(Histogram<u64>);

/// The longest latency recorded as itself: an hour, in microseconds.
const MAX_US: u64 = 3_600_000_000;

impl Default for Latencies {
    fn default() -> Self {
        Self(Histogram::new_with_bounds(1, MAX_US, 3).expect("valid bounds"))
    }
}

impl Latencies {
    /// Records one latency.
    pub fn record(&mut self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(MAX_US);
        self.0.saturating_record(us.clamp(1, MAX_US));
    }

    /// Adds every latency of `other`.
    pub fn merge(&mut self, other: &Latencies) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.0.add(&other.0);
    }

    /// How many latencies were recorded.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// True when nothing was recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `q`-quantile (0..=1) in microseconds; NaN when empty.
    #[must_use]
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        self.0.value_at_quantile(q.clamp(0.0, 1.0)) as f64
    }
}

/// The median of `values` (mean of the middle two for an even count); NaN when empty.
///
/// # Examples
///
/// ```
/// assert_eq!(redquorum_benches::median(&[3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(redquorum_benches::median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
/// ```
#[must_use]
pub fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quantile_of_one_sample_is_that_sample_and_empty_is_nan() {
        let mut one = Latencies::default();
        one.record(Duration::from_micros(7));
        assert_eq!(one.quantile_us(0.0), 7.0);
        assert_eq!(one.quantile_us(1.0), 7.0);
        assert!(Latencies::default().quantile_us(0.5).is_nan());
    }

    #[test]
    fn merging_adds_the_counts_and_extremes_are_clamped() {
        let mut a = Latencies::default();
        let mut b = Latencies::default();
        a.record(Duration::ZERO);
        b.record(Duration::from_secs(7200));
        a.merge(&b);
        assert_eq!(a.len(), 2);
        assert_eq!(a.quantile_us(0.0), 1.0);
        assert!(a.quantile_us(1.0) >= 3_599_000_000.0);
    }

    #[test]
    fn three_significant_digits() {
        let mut l = Latencies::default();
        l.record(Duration::from_micros(123_456));
        let p50 = l.quantile_us(0.5);
        assert!((p50 - 123_456.0).abs() / 123_456.0 < 0.001, "{p50}");
    }

    #[test]
    fn median_ignores_nan() {
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
        assert!(median(&[]).is_nan());
    }
}
