//! The torture report: counts from the history, the nemesis log and the
//! verdict, as text or JSON (serde); latency percentiles from an HDR
//! histogram.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use redquorum_benches::Latencies;
use redquorum_harness::{FaultLog, LeakedKey, Outcome, Session, Verdict};
use serde::Serialize;

/// Examples shown per violation kind.
const EXAMPLES: usize = 3;

pub(super) struct Report {
    sessions: usize,
    granted: usize,
    completed: usize,
    abandoned: usize,
    indeterminate: usize,
    refused: BTreeMap<String, usize>,
    faults: BTreeMap<&'static str, u64>,
    fault_errors: Vec<String>,
    violations: BTreeMap<&'static str, usize>,
    examples: Vec<(&'static str, String)>,
    leaked: Vec<String>,
    /// Acquire latency (start → grant) of granted sessions.
    latencies: Latencies,
    elapsed: Duration,
}

impl Report {
    pub(super) fn new(
        sessions: &[Session],
        faults: &FaultLog,
        verdict: &Verdict,
        leaks: &[LeakedKey],
        elapsed: Duration,
    ) -> Self {
        let mut refused = BTreeMap::new();
        let (mut granted, mut completed, mut abandoned, mut indeterminate) = (0, 0, 0, 0);
        let mut latencies = Latencies::default();
        for s in sessions {
            if let Some(grant) = s.grant {
                granted += 1;
                latencies.record(grant.saturating_sub(s.start));
            }
            match &s.outcome {
                Outcome::Completed => completed += 1,
                Outcome::Abandoned => abandoned += 1,
                Outcome::Indeterminate(_) => indeterminate += 1,
                Outcome::NotAcquired(kind) => *refused.entry(kind.clone()).or_default() += 1,
                _ => {}
            }
        }
        let mut examples = Vec::new();
        let mut shown: BTreeMap<&'static str, usize> = BTreeMap::new();
        for v in &verdict.violations {
            let count = shown.entry(v.kind()).or_default();
            if *count < EXAMPLES {
                *count += 1;
                examples.push((v.kind(), v.to_string()));
            }
        }
        Self {
            sessions: sessions.len(),
            granted,
            completed,
            abandoned,
            indeterminate,
            refused,
            faults: faults
                .injected
                .iter()
                .map(|(k, n)| (k.name(), *n))
                .collect(),
            fault_errors: faults.errors.clone(),
            violations: verdict.by_kind(),
            examples,
            leaked: leaks.iter().map(ToString::to_string).collect(),
            latencies,
            elapsed,
        }
    }

    fn violation_total(&self) -> usize {
        self.violations.values().sum()
    }

    fn success_rate(&self) -> f64 {
        if self.sessions == 0 {
            0.0
        } else {
            self.granted as f64 / self.sessions as f64
        }
    }

    /// The `p` quantile of the acquire latencies (zero when none was granted).
    fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(self.latencies.quantile_us(p) / 1e6)
    }

    pub(super) fn text(&self) -> String {
        let mut out = String::new();
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
        let _ = writeln!(
            out,
            "\n== redquorum torture report ({:.0} s) ==",
            self.elapsed.as_secs_f64()
        );
        let _ = writeln!(
            out,
            "sessions      {} (granted {}, completed {}, abandoned before write {}, indeterminate {})",
            self.sessions, self.granted, self.completed, self.abandoned, self.indeterminate
        );
        let refused: Vec<String> = self
            .refused
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "refused       {}",
            if refused.is_empty() {
                "none".into()
            } else {
                refused.join(", ")
            }
        );
        let _ = writeln!(
            out,
            "acquire       success {:.1}%, latency p50 {} p99 {} max {}",
            self.success_rate() * 100.0,
            ms(self.percentile(0.5)),
            ms(self.percentile(0.99)),
            ms(self.percentile(1.0))
        );
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "faults        {}",
            if faults.is_empty() {
                "none".into()
            } else {
                faults.join(", ")
            }
        );
        for e in &self.fault_errors {
            let _ = writeln!(out, "  fault error: {e}");
        }
        let violations: Vec<String> = self
            .violations
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "violations    {}",
            if violations.is_empty() {
                "none".into()
            } else {
                violations.join(", ")
            }
        );
        for (kind, text) in &self.examples {
            let _ = writeln!(out, "  [{kind}] {}", text.replace('\n', "\n    "));
        }
        let _ = writeln!(out, "leaked keys   {}", self.leaked.len());
        for leak in self.leaked.iter().take(EXAMPLES) {
            let _ = writeln!(out, "  {leak}");
        }
        out
    }

    /// The report as one JSON object (the fields of [`JsonReport`]).
    pub(super) fn json(&self) -> Result<String, serde_json::Error> {
        let ms = |d: Duration| round(d.as_secs_f64() * 1e3, 2);
        let report = JsonReport {
            elapsed_s: round(self.elapsed.as_secs_f64(), 1),
            sessions: self.sessions,
            granted: self.granted,
            completed: self.completed,
            abandoned: self.abandoned,
            indeterminate: self.indeterminate,
            refused: &self.refused,
            acquire_success_rate: round(self.success_rate(), 4),
            acquire_latency_ms: LatencyMs {
                p50: ms(self.percentile(0.5)),
                p99: ms(self.percentile(0.99)),
                max: ms(self.percentile(1.0)),
            },
            faults: &self.faults,
            fault_errors: &self.fault_errors,
            violations: &self.violations,
            violation_examples: self
                .examples
                .iter()
                .map(|(kind, detail)| Example { kind, detail })
                .collect(),
            leaked: &self.leaked,
        };
        serde_json::to_string(&report)
    }

    pub(super) fn last_line(&self) -> String {
        format!(
            "sessions={} violations={} leaked={}",
            self.sessions,
            self.violation_total(),
            self.leaked.len()
        )
    }
}

/// `redquorum torture --json`: one object, field by field as documented in
/// docs/torture.md.
#[derive(Serialize)]
struct JsonReport<'a> {
    elapsed_s: f64,
    sessions: usize,
    granted: usize,
    completed: usize,
    abandoned: usize,
    indeterminate: usize,
    refused: &'a BTreeMap<String, usize>,
    acquire_success_rate: f64,
    acquire_latency_ms: LatencyMs,
    faults: &'a BTreeMap<&'static str, u64>,
    fault_errors: &'a [String],
    violations: &'a BTreeMap<&'static str, usize>,
    violation_examples: Vec<Example<'a>>,
    leaked: &'a [String],
}

#[derive(Serialize)]
struct LatencyMs {
    p50: f64,
    p99: f64,
    max: f64,
}

#[derive(Serialize)]
struct Example<'a> {
    kind: &'a str,
    detail: &'a str,
}

/// `value` rounded to `decimals` places.
fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_line_counts_sessions_violations_and_leaks() {
        let ms = Duration::from_millis;
        let sessions = vec![
            Session::granted(0, "r", "a", ms(0), ms(1), ms(100)),
            Session::granted(1, "r", "b", ms(0), ms(50), ms(150)),
        ];
        let leak = LeakedKey {
            node: "n:1".into(),
            key: "k".into(),
            pttl_ms: 5,
        };
        let values = [("r".to_owned(), 2)].into_iter().collect();
        let verdict = redquorum_harness::check(&sessions, &values, std::slice::from_ref(&leak));
        let report = Report::new(&sessions, &FaultLog::default(), &verdict, &[leak], ms(10));
        assert_eq!(report.last_line(), "sessions=2 violations=2 leaked=1");
        let json: serde_json::Value = serde_json::from_str(&report.json().unwrap()).unwrap();
        assert_eq!(json["violations"]["overlap"], 1);
        assert_eq!(json["sessions"], 2);
        assert_eq!(json["acquire_latency_ms"]["p50"], 1.0);
        assert_eq!(json["leaked"][0], "k on n:1 (pttl 5 ms)");
        assert!(report.text().contains("overlap 1"));
    }
}
