//! Percentiles of latency samples and medians across repeats.

use std::time::Duration;

/// The `q`-quantile (0..=1) of `sorted` by nearest rank; zero when empty.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let ms = |n| Duration::from_millis(n);
/// let sorted = [ms(1), ms(2), ms(3), ms(4)];
/// assert_eq!(redquorum_benches::percentile(&sorted, 0.5), ms(2));
/// assert_eq!(redquorum_benches::percentile(&sorted, 0.99), ms(4));
/// ```
#[must_use]
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // Nearest rank: the smallest value with at least q of the samples at or below it.
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
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
    fn percentile_of_one_sample_is_that_sample() {
        let one = [Duration::from_micros(7)];
        assert_eq!(percentile(&one, 0.0), one[0]);
        assert_eq!(percentile(&one, 1.0), one[0]);
        assert_eq!(percentile(&[], 0.5), Duration::ZERO);
    }

    #[test]
    fn percentile_p99_of_a_hundred_is_the_99th() {
        let sorted: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        assert_eq!(percentile(&sorted, 0.99), Duration::from_micros(99));
        assert_eq!(percentile(&sorted, 0.5), Duration::from_micros(50));
    }

    #[test]
    fn median_ignores_nan() {
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
        assert!(median(&[]).is_nan());
    }
}
