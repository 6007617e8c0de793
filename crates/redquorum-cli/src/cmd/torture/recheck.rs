//! `redquorum torture --recheck FILE`: the checker run again over a saved
//! history, with what the run exercised and whether it was vacuous.

use std::path::Path;
use std::time::Duration;

use redquorum_harness::{FaultKind, HistoryFile};

use super::plan::Ran;

/// A saved run (`--recheck FILE`) checked again, as a run's result.
pub(super) fn ran(path: &Path) -> Result<Ran, String> {
    let file = HistoryFile::load(path).map_err(|e| e.to_string())?;
    let verdict = file.check();
    let exercised = redquorum_harness::Exercised::measure(&file.sessions, &file.faults);
    let kinds: Vec<FaultKind> = file
        .info
        .nemesis
        .iter()
        .filter_map(|k| k.parse().ok())
        .collect();
    let duration = Duration::from_millis(file.info.duration_ms);
    let mut vacuous = exercised.vacuous(duration, &kinds, &[]);
    vacuous.extend(super::plan::lock_delay_untested(&file));
    vacuous.extend(super::plan::operator_untested(&file));
    let elapsed = file
        .sessions
        .iter()
        .filter_map(|s| s.release.or(Some(s.start)))
        .max()
        .unwrap_or_default();
    eprintln!(
        "torture: re-checking {} ({} sessions, {} faults, {} audited keys)",
        path.display(),
        file.sessions.len(),
        file.faults.len(),
        file.keys.len()
    );
    Ok(Ran {
        file,
        verdict,
        exercised,
        vacuous,
        fault_errors: Vec::new(),
        elapsed,
    })
}
