//! The torture report: what the run did and exercised, the faults, the
//! checker's verdict with examples and the faults around each, and the
//! damage to the protected data, as text or JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::Serialize;

use redquorum_harness::{Exercised, FaultEvent, Outcome, TortureRun};

use super::configurations::{self, ConfigurationRow};
use super::example::{EXAMPLES, Example, examples};
use super::operator_summary::OperatorSummary;

#[derive(Debug, Serialize)]
pub(crate) struct Report {
    elapsed_s: f64,
    lock_kind: String,
    /// With a lock-delay: the holders that certainly vanished (their hold
    /// expired before their release), after which no grant may come early.
    vanished_holders: Option<usize>,
    /// With an operator: its calls, and how many tested a promise.
    operator: Option<OperatorSummary>,
    mutant: Option<String>,
    sessions: usize,
    granted: usize,
    completed: usize,
    abandoned: usize,
    rejected: usize,
    indeterminate: usize,
    refused: BTreeMap<String, usize>,
    acquire_success_rate: f64,
    acquire_latency_ms: Latency,
    exercised: Exercised,
    /// A row per lock configuration when the client groups differ.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    configurations: Vec<ConfigurationRow>,
    faults: BTreeMap<&'static str, u64>,
    fault_errors: Vec<String>,
    pub(crate) violations: BTreeMap<&'static str, usize>,
    /// Seconds into the run when the first violation showed.
    pub(crate) first_violation_s: Option<f64>,
    damage: Damage,
    examples: Vec<Example>,
    leaked: Vec<String>,
    pub(crate) vacuous: Vec<String>,
    /// Why the violations prove nothing: the machine's wall clock stepped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) void: Option<String>,
}

#[derive(Debug, Serialize)]
struct Latency {
    p50: f64,
    p99: f64,
    max: f64,
}

/// What happened to the protected data (Jepsen's measure: lost acknowledged updates).
#[derive(Debug, Serialize)]
struct Damage {
    accepted_writes: usize,
    lost_updates: usize,
    lost_update_rate: f64,
    stale_writes_accepted: usize,
    stale_writes_refused: usize,
}

impl Report {
    pub(crate) fn new(ran: &TortureRun) -> Self {
        let sessions = &ran.file.sessions;
        let mut refused = BTreeMap::new();
        let (mut abandoned, mut indeterminate) = (0, 0);
        let mut latency = Histogram::<u64>::new(3).expect("3 significant figures is valid");
        for s in sessions {
            if let Some(grant) = s.grant {
                let _ = latency.record(grant.saturating_sub(s.start).as_micros() as u64);
            }
            match &s.outcome {
                Outcome::Abandoned => abandoned += 1,
                Outcome::Indeterminate(_) => indeterminate += 1,
                Outcome::NotAcquired(kind) => *refused.entry(kind.clone()).or_default() += 1,
                _ => {}
            }
        }
        let verdict = &ran.verdict;
        let elapsed = ran.elapsed;
        let first = verdict
            .violations
            .iter()
            .map(|v| v.at().unwrap_or(elapsed))
            .min();
        let ex = &ran.exercised;
        let lost_updates = verdict.count("lost-update");
        let ms = |us: u64| us as f64 / 1e3;
        Self {
            elapsed_s: elapsed.as_secs_f64(),
            lock_kind: ran.file.info.lock_kind.clone(),
            vanished_holders: ran
                .file
                .info
                .lock_delay
                .map(|rule| redquorum_harness::vanished_holders(sessions, &rule)),
            operator: OperatorSummary::new(&ran.file),
            mutant: ran.file.info.mutant.clone(),
            sessions: sessions.len(),
            granted: ex.granted,
            completed: ex.completed,
            abandoned,
            rejected: ex.rejected,
            indeterminate,
            refused,
            acquire_success_rate: if sessions.is_empty() {
                0.0
            } else {
                ex.granted as f64 / sessions.len() as f64
            },
            acquire_latency_ms: Latency {
                p50: ms(latency.value_at_quantile(0.5)),
                p99: ms(latency.value_at_quantile(0.99)),
                max: ms(latency.max()),
            },
            exercised: ex.clone(),
            configurations: configurations::rows(&ran.file, verdict),
            faults: count_faults(&ran.file.faults),
            fault_errors: ran.fault_errors.clone(),
            violations: verdict.by_kind(),
            first_violation_s: first.map(|t| t.as_secs_f64()),
            damage: Damage {
                accepted_writes: ex.completed,
                lost_updates,
                lost_update_rate: if ex.completed == 0 {
                    0.0
                } else {
                    lost_updates as f64 / ex.completed as f64
                },
                stale_writes_accepted: verdict.count("stale-write"),
                stale_writes_refused: ex.rejected,
            },
            examples: examples(verdict, &ran.file.faults),
            leaked: ran.file.leaked.iter().map(ToString::to_string).collect(),
            vacuous: ran.vacuous.clone(),
            void: ran.void.clone(),
        }
    }

    pub(crate) fn violation_total(&self) -> usize {
        self.violations.values().sum()
    }

    pub(crate) fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        let list = |items: Vec<String>| {
            if items.is_empty() {
                "none".to_owned()
            } else {
                items.join(", ")
            }
        };
        let _ = writeln!(
            out,
            "\n== redquorum torture report ({:.0} s){}{} ==",
            self.elapsed_s,
            if self.lock_kind.is_empty() {
                String::new()
            } else {
                format!(", {} lock", self.lock_kind)
            },
            self.mutant
                .as_ref()
                .map_or(String::new(), |m| format!(", mutant {m}"))
        );
        let _ = writeln!(
            out,
            "sessions      {} (granted {}, accepted writes {}, gave up before the write {}, \
             refused by the fenced store {}, indeterminate {})",
            self.sessions,
            self.granted,
            self.completed,
            self.abandoned,
            self.rejected,
            self.indeterminate
        );
        let _ = writeln!(
            out,
            "refused       {}",
            list(
                self.refused
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect()
            )
        );
        let l = &self.acquire_latency_ms;
        let _ = writeln!(
            out,
            "acquire       success {:.1}%, latency p50 {:.1} ms p99 {:.1} ms max {:.1} ms",
            self.acquire_success_rate * 100.0,
            l.p50,
            l.p99,
            l.max
        );
        let ex = &self.exercised;
        let _ = writeln!(
            out,
            "exercised     {} granted, {} ran to within 10% of their deadline, {} paused, \
             {} renewed twice or more, {} lost their lease",
            ex.granted, ex.near_deadline, ex.paused, ex.renewed, ex.lost_leases
        );
        let counts = |map: Vec<(String, usize)>| {
            list(map.into_iter().map(|(k, n)| format!("{k} {n}")).collect())
        };
        if !ex.by_kind.is_empty() && (ex.by_kind.len() > 1 || !ex.shared.is_empty()) {
            let _ = writeln!(
                out,
                "  granted per kind: {}",
                counts(ex.by_kind.iter().map(|(k, n)| (k.clone(), *n)).collect())
            );
            let _ = writeln!(
                out,
                "  shared a resource with a compatible hold: {}",
                counts(
                    ex.shared
                        .iter()
                        .map(|(k, n)| ((*k).to_owned(), *n))
                        .collect()
                )
            );
        }
        if !ex.dropped.is_empty() {
            let _ = writeln!(
                out,
                "  futures dropped part-way: {}",
                counts(
                    ex.dropped
                        .iter()
                        .map(|(k, n)| ((*k).to_owned(), *n))
                        .collect()
                )
            );
        }
        let (handed, adopted, refused) = (
            ex.hand_overs.handed,
            ex.hand_overs.adopted,
            ex.hand_overs.refused,
        );
        if handed > 0 {
            let _ = writeln!(
                out,
                "  hand-overs: {handed} holds handed over as tickets, {adopted} adopters granted, {refused} refused"
            );
        }
        if let Some(vanished) = self.vanished_holders {
            let _ = writeln!(
                out,
                "  lock-delay checked after {vanished} holders that vanished (hold expired before the release)"
            );
        }
        if let Some(op) = &self.operator {
            op.write_lines(&mut out);
        }
        let _ = writeln!(
            out,
            "  struck while a lock was held: {}",
            list(
                ex.faults_while_held
                    .iter()
                    .map(|(k, n)| format!("{} {n}", k.name()))
                    .collect()
            )
        );
        out.push_str(&configurations::text(&self.configurations));
        let _ = writeln!(
            out,
            "faults        {}",
            list(
                self.faults
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect()
            )
        );
        for e in &self.fault_errors {
            let _ = writeln!(out, "  note: {e}");
        }
        let d = &self.damage;
        let _ = writeln!(
            out,
            "damage        {} lost updates of {} accepted writes ({:.2}%), stale writes accepted {}, \
             refused by fencing {}",
            d.lost_updates,
            d.accepted_writes,
            d.lost_update_rate * 100.0,
            d.stale_writes_accepted,
            d.stale_writes_refused
        );
        let _ = writeln!(
            out,
            "violations    {}{}",
            list(
                self.violations
                    .iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect()
            ),
            self.first_violation_s
                .map_or(String::new(), |t| format!(" (first at {t:.1} s)"))
        );
        for example in &self.examples {
            let _ = writeln!(
                out,
                "  [{}] {}",
                example.kind,
                example.detail.replace('\n', "\n    ")
            );
            for fault in &example.faults_around {
                let _ = writeln!(out, "      fault around it: {fault}");
            }
        }
        let _ = writeln!(out, "leaked keys   {}", self.leaked.len());
        for leak in self.leaked.iter().take(EXAMPLES) {
            let _ = writeln!(out, "  {leak}");
        }
        for why in &self.vacuous {
            let _ = writeln!(out, "VACUOUS       {why}");
        }
        if let Some(why) = &self.void {
            let _ = writeln!(out, "VOID          {why}");
        }
        out
    }

    pub(crate) fn last_line(&self) -> String {
        format!(
            "sessions={} violations={} leaked={}{}",
            self.sessions,
            self.violation_total(),
            self.leaked.len(),
            match (&self.void, self.vacuous.is_empty()) {
                (Some(_), _) => " void",
                (None, false) => " vacuous",
                (None, true) => "",
            }
        )
    }
}

fn count_faults(faults: &[FaultEvent]) -> BTreeMap<&'static str, u64> {
    let mut counts = BTreeMap::new();
    for f in faults {
        *counts.entry(f.kind.name()).or_default() += 1;
    }
    counts
}
