//! The report's account of the run's operator: its inspections and
//! force-releases, and how soon the holders a lock kept alive heard of a
//! force-release or an ask (`check/notices.rs` in the harness).

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use redquorum_harness::HistoryFile;

/// What the run's operator did (`--inspect-every`, `--force-release-every`).
#[derive(Debug, Serialize)]
pub(super) struct OperatorSummary {
    inspections: usize,
    /// Inspections that named a holder.
    naming_a_holder: usize,
    force_releases: usize,
    /// Holders granted before a successful force-release began and still
    /// holding then: the ones it ousted.
    ousted_holders: usize,
    /// Holders whose lock kept their lease alive, ousted by a force-release
    /// the loss-notice rule judges.
    kept_ousted: usize,
    /// How long after the force-release returned they still believed: the
    /// median and the longest, in ms.
    kept_knew_after_ms: Option<(f64, f64)>,
    /// Asks to let go (`Redlock::ask_release`).
    asks: usize,
    /// Holders kept alive by their lock that an ask the rule judges met,
    /// and how many of them heard it.
    kept_asked: usize,
    kept_heard: usize,
    /// How long after the ask began they heard it: the median and the
    /// longest, in ms.
    kept_heard_after_ms: Option<(f64, f64)>,
}

impl OperatorSummary {
    /// `None` when the run had no operator.
    pub(super) fn new(file: &HistoryFile) -> Option<Self> {
        let info = &file.info;
        if info.inspect_every_ms.is_none() && info.force_release_every_ms.is_none() {
            return None;
        }
        let calls = &file.operator;
        let count = |name: &str| calls.iter().filter(|c| c.action.name() == name).count();
        let knew_after = redquorum_harness::kept_holders_ousted(&file.sessions, calls);
        let asked = redquorum_harness::kept_holders_asked(&file.sessions, calls);
        let heard_after: Vec<Duration> = asked.iter().flatten().copied().collect();
        Some(Self {
            inspections: count("inspect"),
            naming_a_holder: redquorum_harness::inspections_naming_holders(calls),
            force_releases: count("force-release"),
            ousted_holders: redquorum_harness::ousted_holders(&file.sessions, calls),
            kept_ousted: knew_after.len(),
            kept_knew_after_ms: median_and_longest_ms(knew_after),
            asks: count("ask"),
            kept_asked: asked.len(),
            kept_heard: heard_after.len(),
            kept_heard_after_ms: median_and_longest_ms(heard_after),
        })
    }

    /// Its lines of the text report.
    pub(super) fn write_lines(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "  operator: {} inspections ({} naming a holder), {} force-releases ({} holders ousted)",
            self.inspections, self.naming_a_holder, self.force_releases, self.ousted_holders
        );
        if let Some((median, longest)) = self.kept_knew_after_ms {
            let _ = writeln!(
                out,
                "  loss notices: {} holders kept alive by their lock ousted, knew {median:.0} ms after the force-release returned (median), {longest:.0} ms at most",
                self.kept_ousted
            );
        }
        if self.asks > 0 {
            let heard = self
                .kept_heard_after_ms
                .map_or(String::new(), |(median, longest)| {
                    format!(
                        ", {median:.0} ms after the ask began (median), {longest:.0} ms at most"
                    )
                });
            let _ = writeln!(
                out,
                "  asks: {} asks to let go; {} holders kept alive by their lock asked, {} heard{heard}",
                self.asks, self.kept_asked, self.kept_heard
            );
        }
    }
}

/// The median and the longest of `times`, in ms; `None` when empty.
fn median_and_longest_ms(mut times: Vec<Duration>) -> Option<(f64, f64)> {
    times.sort();
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    Some((ms(times.get(times.len() / 2)?), ms(times.last()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_and_the_longest_are_read_from_the_sorted_times() {
        let ms = Duration::from_millis;
        assert_eq!(median_and_longest_ms(vec![]), None);
        assert_eq!(
            median_and_longest_ms(vec![ms(300), ms(10), ms(40)]),
            Some((40.0, 300.0))
        );
    }
}
