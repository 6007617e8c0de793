//! A violation shown as an example in the torture report, with the faults
//! in force around it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use redquorum_harness::{FaultEvent, Verdict, Violation};

/// Examples shown per violation kind.
pub(super) const EXAMPLES: usize = 3;
/// Faults shown around one example.
const FAULTS_AROUND: usize = 8;

/// One violation, and the faults around it.
#[derive(Debug, Serialize)]
pub(super) struct Example {
    pub(super) kind: &'static str,
    pub(super) detail: String,
    pub(super) faults_around: Vec<String>,
}

/// Up to [`EXAMPLES`] violations per kind, each with the faults in force
/// from a second before its sessions started to a second after they ended.
pub(super) fn examples(verdict: &Verdict, faults: &[FaultEvent]) -> Vec<Example> {
    let mut shown: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for v in &verdict.violations {
        let count = shown.entry(v.kind()).or_default();
        if *count >= EXAMPLES {
            continue;
        }
        *count += 1;
        out.push(Example {
            kind: v.kind(),
            detail: v.to_string(),
            faults_around: around(v, faults),
        });
    }
    out
}

fn around(v: &Violation, faults: &[FaultEvent]) -> Vec<String> {
    let sessions = v.sessions();
    let from = sessions.iter().map(|s| s.start).min();
    let until = sessions
        .iter()
        .filter_map(|s| s.release.or(s.deadline()).or(s.grant))
        .max();
    let (from, until) = match (from, until, v) {
        (Some(from), Some(until), _) => (from, until),
        (_, _, Violation::OrphanKey { key, .. }) => (key.set_at(), key.last_seen),
        _ => return Vec::new(),
    };
    let second = Duration::from_secs(1);
    faults
        .iter()
        .filter(|f| f.overlaps(from.saturating_sub(second), until + second))
        .take(FAULTS_AROUND)
        .map(ToString::to_string)
        .collect()
}
