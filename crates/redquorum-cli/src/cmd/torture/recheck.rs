//! `redquorum torture --recheck FILE`: the checker run again over a saved
//! history, with what the run exercised and whether it was vacuous
//! (`redquorum_harness::TortureRun::recheck`).

use std::path::Path;

use redquorum_harness::{HistoryFile, TortureRun};

/// A saved run (`--recheck FILE`) checked again, as a run's result.
pub(super) fn ran(path: &Path) -> Result<TortureRun, String> {
    let file = HistoryFile::load(path).map_err(|e| e.to_string())?;
    stderr_line!(
        "torture: re-checking {} ({} sessions, {} faults, {} audited keys)",
        path.display(),
        file.sessions.len(),
        file.faults.len(),
        file.keys.len()
    );
    Ok(TortureRun::recheck(file))
}
