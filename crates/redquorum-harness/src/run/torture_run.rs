//! What a torture run left ([`TortureRun`]: the saved form, the verdict,
//! what it exercised and why it may prove nothing), why one did not
//! finish ([`TortureStopped`]), a saved run checked again, and the notes a
//! run adds to its report (late wake-ups, steps of the machine's clock).

use std::fmt;
use std::time::Duration;

use super::history_file::HistoryFile;
use crate::check::{
    Exercised, Verdict, inspections_naming_holders, ousted_holders, vanished_holders,
};
use crate::faults::FaultKind;

/// What a torture run left.
#[derive(Debug, Clone)]
pub struct TortureRun {
    /// The run as saved (`--history`): what was run, every session, fault,
    /// audited key, operator call, leak and protected value.
    pub file: HistoryFile,
    /// The checker's verdict.
    pub verdict: Verdict,
    /// What the run exercised.
    pub exercised: Exercised,
    /// Why the run proves nothing (empty: it exercised what it was asked to).
    pub vacuous: Vec<String>,
    /// Faults that could not be injected or healed, and what was skipped.
    pub fault_errors: Vec<String>,
    /// Why the run's violations prove nothing, when they do not: the
    /// machine's wall clock stepped during the run ([`void_by_host_clock`]).
    pub void: Option<String>,
    /// How long it took.
    pub elapsed: Duration,
}

/// Why a torture run did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TortureStopped {
    /// Nodes, proxies, the store or the lock could not be set up.
    Setup(String),
    /// Interrupted (the caller's interrupt came first), with no verdict.
    Interrupted {
        /// The sessions recorded until then.
        sessions: usize,
    },
}

impl fmt::Display for TortureStopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TortureStopped::Setup(problem) => f.write_str(problem),
            TortureStopped::Interrupted { sessions } => {
                write!(f, "interrupted after {sessions} sessions, no verdict")
            }
        }
    }
}

impl std::error::Error for TortureStopped {}

impl TortureRun {
    /// A saved run checked again, as a run's result: its verdict, what it
    /// exercised and whether it was vacuous (the holder mix is not saved,
    /// so holders are not asked about), its length up to the last release.
    ///
    /// # Examples
    ///
    /// ```
    /// let run = redquorum_harness::TortureRun::recheck(Default::default());
    /// assert!(run.verdict.is_ok());
    /// assert!(!run.vacuous.is_empty(), "nothing was granted");
    /// ```
    #[must_use]
    pub fn recheck(file: HistoryFile) -> Self {
        let verdict = file.check();
        let exercised = Exercised::measure(&file.sessions, &file.faults);
        let kinds: Vec<FaultKind> = file
            .info
            .nemesis
            .iter()
            .filter_map(|k| k.parse().ok())
            .collect();
        let duration = Duration::from_millis(file.info.duration_ms);
        let mut vacuous = exercised.vacuous(duration, &kinds, &[]);
        vacuous.extend(lock_delay_untested(&file));
        vacuous.extend(operator_untested(&file));
        vacuous.extend(hand_overs_untested(&file, &exercised));
        let elapsed = file
            .sessions
            .iter()
            .filter_map(|s| s.release.or(Some(s.start)))
            .max()
            .unwrap_or_default();
        Self {
            void: void_by_host_clock(&file, &verdict),
            fault_errors: host_clock_notes(&file),
            file,
            verdict,
            exercised,
            vacuous,
            elapsed,
        }
    }
}

/// Why a run's violations prove nothing: it found some, and the machine's
/// wall clock stepped during it (`evidence/host_clock.rs`). Every local
/// node reads that clock, so a step moves all of them at once (forward:
/// every key expires early), which no lock on these nodes can survive and
/// the assumptions rule out (docs/operations.md). `None` when it found
/// nothing (it proved what it proved despite the step) or saw no step.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{HistoryFile, HostClockStep, Verdict, void_by_host_clock};
/// let mut file = HistoryFile::default();
/// file.host_steps.push(HostClockStep { at: Duration::from_secs(3), by_us: 2_616_000 });
/// // Nothing found: the run stands.
/// assert_eq!(void_by_host_clock(&file, &Verdict::default()), None);
/// ```
#[must_use]
pub fn void_by_host_clock(file: &HistoryFile, verdict: &Verdict) -> Option<String> {
    if verdict.is_ok() || file.host_steps.is_empty() {
        return None;
    }
    let steps: Vec<String> = file.host_steps.iter().map(ToString::to_string).collect();
    Some(format!(
        "{}: every node's clock moved at once, outside the lock's assumptions, \
         so this run's {} violations prove nothing; run it again",
        steps.join("; "),
        verdict.violations.len()
    ))
}

/// A note per step of the machine's wall clock during the run.
pub(super) fn host_clock_notes(file: &HistoryFile) -> Vec<String> {
    (file.host_steps.iter())
        .map(|step| format!("{step} (every node's clock with it)"))
        .collect()
}

/// The report's notes of the client runtimes' and the fault proxies' late
/// wake-ups, if any.
pub(super) fn lag_note(lags: &[crate::evidence::RuntimeLag]) -> Vec<String> {
    let (proxies, clients): (Vec<_>, Vec<_>) = lags.iter().partition(|lag| lag.node.is_some());
    let line = |what: &str, lags: &[&crate::evidence::RuntimeLag]| {
        let worst = lags.iter().max_by_key(|lag| lag.late)?;
        let whose = match worst.node {
            Some(node) => format!("group {}, node {node}", worst.group),
            None => format!("group {}", worst.group),
        };
        Some(format!(
            "{what} woke {} times {} ms or more late, at most {:.0} ms ({whose} at {:.1} s)",
            lags.len(),
            crate::lag_meter::LAG_RECORDED.as_millis(),
            worst.late.as_secs_f64() * 1e3,
            worst.at.as_secs_f64()
        ))
    };
    [
        line("client runtimes", &clients),
        line("fault proxies", &proxies),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Why a run with a lock-delay proves nothing about it: no holder vanished
/// (released after its hold expired), so the rule had nothing to judge. For
/// a run and for its re-check.
pub(super) fn lock_delay_untested(file: &HistoryFile) -> Option<String> {
    let rule = file.info.lock_delay.as_ref()?;
    (vanished_holders(&file.sessions, rule) == 0).then(|| {
        "no holder vanished (released after its hold expired), so the lock-delay was never tested"
            .to_owned()
    })
}

/// Why a run that hands holds over proves nothing about it: half a minute
/// or more (about 40 hand-overs a minute in the default run) and not one
/// hold handed over, so no adoption was judged. For a run and for its
/// re-check.
pub(super) fn hand_overs_untested(file: &HistoryFile, exercised: &Exercised) -> Option<String> {
    let long = file.info.duration_ms >= 30_000;
    (file.info.hand_overs && long && exercised.hand_overs.handed == 0).then(|| {
        "no hold was handed over as a lease ticket, so adoption was never tested".to_owned()
    })
}

/// Why a run with an operator asked for proves nothing about its calls:
/// no inspection named a holder, or no force-release ousted one (the
/// default run's calls are not asked for). For a run and for its re-check.
pub(super) fn operator_untested(file: &HistoryFile) -> Vec<String> {
    let mut untested = Vec::new();
    if file.info.operator_by_default {
        return untested;
    }
    if file.info.inspect_every_ms.is_some() && inspections_naming_holders(&file.operator) == 0 {
        untested.push("no inspection named a holder, so inspection was never tested".to_owned());
    }
    if file.info.force_release_every_ms.is_some()
        && ousted_holders(&file.sessions, &file.operator) == 0
    {
        untested.push(
            "no force-release ousted a holder, so its fencing token was never tested".to_owned(),
        );
    }
    untested
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A saved run of `duration_ms` that did or did not hand holds over.
    fn run(hand_overs: bool, duration_ms: u64) -> HistoryFile {
        let mut file = HistoryFile::default();
        (file.info.hand_overs, file.info.duration_ms) = (hand_overs, duration_ms);
        file
    }

    #[test]
    fn a_long_run_that_handed_nothing_over_is_vacuous_and_only_then() {
        let none = Exercised::default();
        let mut some = Exercised::default();
        some.hand_overs.handed = 1;
        assert!(hand_overs_untested(&run(true, 30_000), &none).is_some());
        assert!(hand_overs_untested(&run(true, 30_000), &some).is_none());
        assert!(hand_overs_untested(&run(true, 29_999), &none).is_none());
        assert!(hand_overs_untested(&run(false, 30_000), &none).is_none());
        // Its re-check says the same.
        let recheck = TortureRun::recheck(run(true, 60_000));
        assert!(
            (recheck.vacuous.iter()).any(|why| why.starts_with("no hold was handed over")),
            "{:?}",
            recheck.vacuous
        );
    }
}
