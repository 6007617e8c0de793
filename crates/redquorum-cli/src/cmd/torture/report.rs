//! The torture report: counts from the history, the nemesis log and the
//! verdict, as text or JSON (hand-written: a few flat fields do not need serde).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use redquorum_harness::{FaultLog, LeakedKey, Outcome, Session, Verdict};

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
    /// Acquire latency (start → grant) of granted sessions, sorted.
    latencies: Vec<Duration>,
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
        let mut latencies = Vec::new();
        for s in sessions {
            if let Some(grant) = s.grant {
                granted += 1;
                latencies.push(grant.saturating_sub(s.start));
            }
            match &s.outcome {
                Outcome::Completed => completed += 1,
                Outcome::Abandoned => abandoned += 1,
                Outcome::Indeterminate(_) => indeterminate += 1,
                Outcome::NotAcquired(kind) => *refused.entry(kind.clone()).or_default() += 1,
                _ => {}
            }
        }
        latencies.sort();
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

    fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((self.latencies.len() - 1) as f64 * p).round() as usize;
        self.latencies[rank.min(self.latencies.len() - 1)]
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

    pub(super) fn json(&self) -> String {
        let map = |m: &BTreeMap<&str, u64>| {
            let fields: Vec<String> = m.iter().map(|(k, n)| format!("{}:{n}", quote(k))).collect();
            format!("{{{}}}", fields.join(","))
        };
        let list = |items: &[String]| {
            let quoted: Vec<String> = items.iter().map(|s| quote(s)).collect();
            format!("[{}]", quoted.join(","))
        };
        let refused: BTreeMap<&str, u64> = self
            .refused
            .iter()
            .map(|(k, n)| (k.as_str(), *n as u64))
            .collect();
        let violations: BTreeMap<&str, u64> = self
            .violations
            .iter()
            .map(|(k, n)| (*k, *n as u64))
            .collect();
        let examples: Vec<String> = self
            .examples
            .iter()
            .map(|(kind, text)| format!("{{\"kind\":{},\"detail\":{}}}", quote(kind), quote(text)))
            .collect();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        format!(
            "{{\"elapsed_s\":{:.1},\"sessions\":{},\"granted\":{},\"completed\":{},\"abandoned\":{},\
             \"indeterminate\":{},\"refused\":{},\"acquire_success_rate\":{:.4},\
             \"acquire_latency_ms\":{{\"p50\":{:.2},\"p99\":{:.2},\"max\":{:.2}}},\"faults\":{},\
             \"fault_errors\":{},\"violations\":{},\"violation_examples\":[{}],\"leaked\":{}}}",
            self.elapsed.as_secs_f64(),
            self.sessions,
            self.granted,
            self.completed,
            self.abandoned,
            self.indeterminate,
            map(&refused),
            self.success_rate(),
            ms(self.percentile(0.5)),
            ms(self.percentile(0.99)),
            ms(self.percentile(1.0)),
            map(&self.faults),
            list(&self.fault_errors),
            map(&violations),
            examples.join(","),
            list(&self.leaked),
        )
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

/// A JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_json_specials() {
        assert_eq!(quote("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
    }

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
        assert!(report.json().contains("\"overlap\":1"));
        assert!(report.text().contains("overlap 1"));
    }
}
