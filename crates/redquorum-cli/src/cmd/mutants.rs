//! `redquorum mutants` (in the planted-bug build only: `tests/mutants.sh
//! mutants`, which applies `crates/redquorum/mutants/` to a copy of the
//! sources and builds it with `--cfg redquorum_mutants`): runs torture against each planted
//! bug of the library and fails unless every one is caught by a named check
//! within the time budget. A checker that cannot fail proves nothing; this
//! is the proof that it can.
//!
//! Each mutant runs against the default `redquorum torture` (every kind on
//! shared names, dropped futures, every fault): what users run must catch
//! it. A mutant whose bug lives in a feature the bare run does not use
//! (a lock-delay, an operator, node clock monitoring, cluster masters)
//! gets the default run with that feature turned on. `--recipes` runs
//! instead the focused recipe each old mutant was written with (faster:
//! `tests/extended.sh`'s proof that the checker can fail). Everything stays within
//! Redlock's assumptions, so `--controls` runs the same run on the real
//! library and requires it to pass: the violation is the mutant's, not
//! the experiment's.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use redquorum::mutants::{self, Mutant};
use redquorum_harness::{TortureRun, TortureStopped};

use crate::cmd::torture::lock::Plan;
use crate::cmd::torture::report::Report;
use crate::exit;

mod recipe;
use recipe::recipe;

/// Options of `redquorum mutants`.
#[derive(Debug, clap::Args)]
pub(crate) struct MutantsArgs {
    /// Only these mutants (comma list); default: all.
    #[arg(long, value_delimiter = ',')]
    only: Vec<Mutant>,
    /// How long each mutant's torture runs (the default run's catches
    /// come within a minute).
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// A mutant counts as caught only if its first violation showed within this.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    budget: Duration,
    /// Run each mutant first for this long (the same run, cut short: its
    /// faults and clients do not depend on the duration), and for the whole
    /// `--duration` only if that found nothing. Most planted bugs are
    /// caught in seconds, so a sweep takes half the time. Controls always
    /// run the whole `--duration`.
    #[arg(long, value_name = "D", value_parser = humantime::parse_duration)]
    try_first: Option<Duration>,
    /// Also run each distinct run on the real library first, which must
    /// pass (once per run: the mutants that share the default run share
    /// its control).
    #[arg(long)]
    controls: bool,
    /// Random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run each mutant with the focused recipe it was written with
    /// instead of the default run (mutants without one still get the
    /// default run).
    #[arg(long)]
    recipes: bool,
    /// Keep each run's history in this directory (`control-<mutant>.jsonl`,
    /// `<mutant>.jsonl`), for `redquorum torture --recheck`: a control that
    /// fails can then be explained.
    #[arg(long, value_name = "DIR")]
    histories: Option<std::path::PathBuf>,
}

/// One line of the table.
struct Row {
    mutant: Option<Mutant>,
    recipe: &'static str,
    caught: bool,
    first_s: Option<f64>,
    checks: String,
    wall_s: f64,
    vacuous: Vec<String>,
}

pub(crate) async fn run(args: MutantsArgs) -> ExitCode {
    if !mutants::PATCHED {
        stderr_line!(
            "redquorum mutants: this build has the mutants' names but not their bugs: \
             build it with tests/mutants.sh (docs/torture.md, \"How planted bugs are built\")"
        );
        return exit::USAGE.into();
    }
    if let Some(dir) = &args.histories
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        stderr_line!("redquorum mutants: --histories {}: {e}", dir.display());
        return exit::USAGE.into();
    }
    let chosen: Vec<Mutant> = if args.only.is_empty() {
        Mutant::ALL.to_vec()
    } else {
        args.only.clone()
    };
    let mut rows = Vec::new();
    // Mutants that share a run (the bare default run) share its control.
    let mut controlled = std::collections::HashSet::new();
    for mutant in chosen {
        let (recipe, plan) = recipe(mutant, &args);
        let runs = if args.controls && controlled.insert(recipe) {
            vec![None, Some(mutant)]
        } else {
            vec![Some(mutant)]
        };
        for planted in runs {
            let plan = Plan {
                mutant: planted.map(|m| m.to_string()),
                ..plan.clone()
            };
            stderr_line!(
                "mutants: {} ({recipe})",
                planted.map_or_else(|| format!("control for {mutant}"), |m| m.to_string())
            );
            let started = Instant::now();
            // A mutant's short try first (if asked): a catch in it is a catch
            // within the budget; otherwise the whole run decides.
            let short = match (planted, args.try_first) {
                (Some(_), Some(first)) if first < plan.duration => Some(first),
                _ => None,
            };
            let mut ran = match run_once(&plan, short.unwrap_or(plan.duration), planted).await {
                Ok(ran) => ran,
                Err(code) => return code,
            };
            if short.is_some() && Report::new(&ran).violation_total() == 0 {
                ran = match run_once(&plan, plan.duration, planted).await {
                    Ok(ran) => ran,
                    Err(code) => return code,
                };
            }
            if let Some(dir) = &args.histories {
                let name = planted.map_or_else(|| format!("control-{mutant}"), |m| m.to_string());
                let path = dir.join(format!("{name}.jsonl"));
                if let Err(e) = ran.file.save(&path) {
                    stderr_line!("redquorum mutants: --histories {}: {e}", path.display());
                }
            }
            let report = Report::new(&ran);
            let checks: Vec<String> = report
                .violations
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            // A void run's violations may be the machine clock's doing.
            let caught = report.violation_total() > 0
                && report.void.is_none()
                && report
                    .first_violation_s
                    .is_some_and(|t| t <= args.budget.as_secs_f64());
            if planted.is_none() && report.violation_total() > 0 {
                crate::stderr::write_text(&report.text());
            }
            rows.push(Row {
                mutant: planted,
                recipe,
                caught,
                first_s: report.first_violation_s,
                checks: checks.join(", "),
                wall_s: started.elapsed().as_secs_f64(),
                vacuous: ran.vacuous.into_iter().chain(ran.void).collect(),
            });
        }
    }
    print!("{}", table(&rows, args.budget));
    let every_mutant_caught = rows.iter().filter(|r| r.mutant.is_some()).all(|r| r.caught);
    let controls_clean = rows
        .iter()
        .filter(|r| r.mutant.is_none())
        .all(|r| r.checks.is_empty() && r.vacuous.is_empty());
    if every_mutant_caught && controls_clean {
        println!("mutants: every mutant caught");
        ExitCode::SUCCESS
    } else {
        println!("mutants: FAILED (a mutant escaped, or a control run failed)");
        ExitCode::from(1)
    }
}

/// One torture run of `plan` for `duration` with `planted` active; the exit
/// code to stop with if it was interrupted or could not be set up.
async fn run_once(
    plan: &Plan,
    duration: Duration,
    planted: Option<Mutant>,
) -> Result<TortureRun, ExitCode> {
    let plan = Plan {
        duration,
        ..plan.clone()
    };
    mutants::activate(planted);
    let result = plan.execute_until(crate::interrupt::received()).await;
    mutants::activate(None);
    result.map_err(|stopped| match stopped {
        TortureStopped::Interrupted { .. } => {
            let signal = crate::interrupt::which();
            stderr_line!("mutants: {stopped} ({})", crate::interrupt::name(signal));
            crate::interrupt::status(signal)
        }
        TortureStopped::Setup(problem) => {
            stderr_line!("redquorum mutants: {problem}");
            exit::UNAVAILABLE.into()
        }
    })
}

fn table(rows: &[Row], budget: Duration) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n| mutant | recipe | caught within {} s | first violation at (s) | checks that fired | run (s) |",
        budget.as_secs()
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    for row in rows {
        let name = row.mutant.map_or_else(
            || "(control: real library)".to_owned(),
            |m| format!("`{m}`"),
        );
        let caught = match (row.mutant, row.caught) {
            (Some(_), true) => "yes".to_owned(),
            (Some(_), false) => "**NO**".to_owned(),
            (None, _) if row.checks.is_empty() && row.vacuous.is_empty() => "clean".to_owned(),
            // It proved nothing (or its clock stepped): say why, not just that.
            (None, _) if row.checks.is_empty() => {
                format!("**FAILED**: vacuous ({})", row.vacuous.join("; "))
            }
            (None, _) => "**FAILED**".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {caught} | {} | {} | {:.0} |",
            row.recipe,
            row.first_s.map_or("-".to_owned(), |t| format!("{t:.1}")),
            if row.checks.is_empty() {
                "none".to_owned()
            } else {
                row.checks.clone()
            },
            row.wall_s
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(checks: &str, vacuous: &[&str]) -> Row {
        Row {
            mutant: None,
            recipe: "the default run",
            caught: false,
            first_s: None,
            checks: checks.to_owned(),
            wall_s: 60.0,
            vacuous: vacuous.iter().map(|&why| why.to_owned()).collect(),
        }
    }

    #[test]
    fn a_control_that_failed_says_whether_it_found_violations_or_proved_nothing() {
        let budget = Duration::from_secs(60);
        assert!(table(&[control("", &[])], budget).contains("| clean |"));
        let violated = table(&[control("overlap 1", &[])], budget);
        assert!(
            violated.contains("| **FAILED** | - | overlap 1 |"),
            "{violated}"
        );
        let vacuous = table(&[control("", &["no holder was paused"])], budget);
        assert!(
            vacuous.contains("| **FAILED**: vacuous (no holder was paused) |"),
            "{vacuous}"
        );
    }
}
