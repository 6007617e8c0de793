//! Spans of time (faults, operator calls) sorted once and found by the
//! time they meet: the checker's rules ask, for each of tens of thousands
//! of keys and reads, which faults or calls were under way around some
//! time, and a soak records thousands of each. Scanning every one for each
//! question made a check quadratic in the run's length.

use std::time::Duration;

use crate::evidence::OperatorCall;
use crate::faults::FaultEvent;

/// `faults` by the time they were in force.
pub(crate) fn faults(faults: &[FaultEvent]) -> ByTime<'_, FaultEvent> {
    ByTime::new(faults, |f| (f.start, f.end))
}

/// The operator's `calls` by the time they were under way.
pub(crate) fn calls(calls: &[OperatorCall]) -> ByTime<'_, OperatorCall> {
    ByTime::new(calls, |call| (call.start, call.end))
}

/// Items with a span (start, end), found by the spans they overlap.
#[derive(Debug, Clone)]
pub(crate) struct ByTime<'a, T> {
    /// The items, by start.
    sorted: Vec<&'a T>,
    starts: Vec<Duration>,
    /// The longest span: an item overlapping a time starts no earlier
    /// than this before it.
    longest: Duration,
    span: fn(&T) -> (Duration, Duration),
}

impl<'a, T> ByTime<'a, T> {
    pub(crate) fn new(items: &'a [T], span: fn(&T) -> (Duration, Duration)) -> Self {
        let mut sorted: Vec<&T> = items.iter().collect();
        sorted.sort_by_key(|item| span(item).0);
        let starts = sorted.iter().map(|item| span(item).0).collect();
        let longest = (sorted.iter())
            .map(|item| {
                let (start, end) = span(item);
                end.saturating_sub(start)
            })
            .max()
            .unwrap_or_default();
        Self {
            sorted,
            starts,
            longest,
            span,
        }
    }

    /// Every item whose span meets `from..=until` (it starts by `until`
    /// and ends at `from` or later), by start.
    pub(crate) fn overlapping(
        &self,
        from: Duration,
        until: Duration,
    ) -> impl Iterator<Item = &'a T> + '_ {
        let first = (self.starts).partition_point(|s| *s < from.saturating_sub(self.longest));
        let past = self.starts.partition_point(|s| *s <= until);
        let span = self.span;
        (self.sorted[first..past.max(first)].iter().copied())
            .filter(move |item| span(item).1 >= from)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    proptest! {
        /// It finds exactly what a scan of every item finds.
        #[test]
        fn finds_what_a_scan_finds(
            spans in prop::collection::vec((0u64..10_000, 0u64..3_000), 0..60),
            from in 0u64..12_000,
            length in 0u64..4_000,
        ) {
            let spans: Vec<(Duration, Duration)> =
                spans.iter().map(|&(start, len)| (ms(start), ms(start + len))).collect();
            let index = ByTime::new(&spans, |&span| span);
            let (from, until) = (ms(from), ms(from + length));
            let mut found: Vec<_> = index.overlapping(from, until).copied().collect();
            let mut scanned: Vec<_> = (spans.iter())
                .filter(|(start, end)| *start <= until && *end >= from)
                .copied()
                .collect();
            found.sort();
            scanned.sort();
            prop_assert_eq!(found, scanned);
        }
    }

    #[test]
    fn an_item_ending_before_it_starts_is_found_by_its_end() {
        let spans = [(ms(500), ms(100)), (ms(0), ms(50))];
        let index = ByTime::new(&spans, |&span| span);
        assert_eq!(index.overlapping(ms(90), ms(600)).count(), 1);
        assert_eq!(index.overlapping(ms(200), ms(400)).count(), 0);
    }
}
