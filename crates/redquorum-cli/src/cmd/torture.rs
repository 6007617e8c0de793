//! `redquorum torture`: clients in groups, each behind its own fault
//! proxies, under a random nemesis, then the checker's verdict and what the
//! run exercised, as a readable (or JSON) report. A run that tested nothing
//! meaningful fails instead of passing; `--history` keeps the run and
//! `--recheck` checks a kept one again. With `--inspect-every` or
//! `--force-release-every` an operator calls beside the clients
//! (`torture/operator.rs`) and the checker holds its calls to their promises.
//!
//! The run itself is the harness's (`redquorum_harness::TorturePlan`:
//! nodes, proxies, key audit, nemesis, workload, leak wait and checker),
//! generic over its `TortureLock` trait. This command resolves the plan
//! from its options (`torture/args.rs`) and builds the library's lock for
//! it (`torture/lock.rs`), driven through the adapter the benchmarks use
//! too (`redquorum_adapter::KindLocker::for_history`: any lock kind, each
//! grant with its owner and fencing tokens for the checker); by default
//! every kind at once on the same names (`MixedLocker`), with acquires and
//! releases dropped part-way at random. The report is `torture/report.rs`.

mod args;
mod cluster;
mod configurations;
mod example;
mod group_locker;
pub(crate) mod lock;
mod operator;
mod operator_summary;
pub(crate) mod outside;
mod population;
mod recheck;
pub(crate) mod report;

use std::process::ExitCode;
#[cfg(redquorum_mutants)]
use std::time::Duration;

use redquorum_harness::TortureStopped;

use crate::exit;
use crate::interrupt;
use crate::nodes_arg::NodesArg;
pub(crate) use args::TortureArgs;
#[cfg(redquorum_mutants)]
use lock::Plan;
use report::Report;

/// The run found a violation (a leaked key counts).
pub(crate) const VIOLATION: u8 = 1;
/// The run tested nothing meaningful (no grant, no fault while held, 0 s, ...).
pub(crate) const VACUOUS: u8 = 2;
/// The run found violations, but the machine's wall clock stepped during
/// it (every node's clock at once): they prove nothing; run it again.
pub(crate) const VOID: u8 = 3;

/// The plan of the default run (`redquorum torture --duration D --seed S`,
/// plus `flags`, nothing else), for the mutant sweep.
#[cfg(redquorum_mutants)]
pub(crate) fn default_plan(duration: Duration, seed: u64, flags: &[&str]) -> Result<Plan, String> {
    #[derive(clap::Parser)]
    struct Default {
        #[command(flatten)]
        torture: TortureArgs,
    }
    let duration = format!("{}ms", duration.as_millis());
    let seed = seed.to_string();
    let mut args = vec!["torture", "--duration", &duration, "--seed", &seed];
    args.extend_from_slice(flags);
    let parsed = <Default as clap::Parser>::try_parse_from(args).map_err(|e| e.to_string())?;
    args::plan(&NodesArg::default(), &parsed.torture)
}

pub(crate) async fn run(nodes: &NodesArg, args: TortureArgs) -> ExitCode {
    if let Some(path) = &args.recheck {
        return recheck(path, args.json);
    }
    let plan = match args::plan(nodes, &args) {
        Ok(plan) => plan,
        Err(problem) => {
            stderr_line!("redquorum torture: {problem}");
            return exit::USAGE.into();
        }
    };
    #[cfg(redquorum_mutants)]
    redquorum::mutants::activate(args.mutant);
    let ran = match plan.execute_until(interrupt::received()).await {
        Ok(ran) => ran,
        Err(TortureStopped::Interrupted { sessions }) => {
            let signal = interrupt::which();
            stderr_line!(
                "torture: interrupted by {} after {sessions} sessions: no verdict; \
                 the nemesis and the local nodes are stopped",
                interrupt::name(signal)
            );
            return interrupt::status(signal);
        }
        Err(TortureStopped::Setup(problem)) => {
            stderr_line!("redquorum torture: {problem}");
            return exit::UNAVAILABLE.into();
        }
    };
    if let Some(path) = &args.history {
        if let Err(e) = ran.file.save(path) {
            stderr_line!("redquorum torture: --history {}: {e}", path.display());
        }
    }
    let report = Report::new(&ran);
    finish(&report, args.json)
}

/// Prints the report and its last line (with `--json`, stdout holds the
/// JSON object only and the last line goes to stderr); the exit status says
/// what it found.
fn finish(report: &Report, json: bool) -> ExitCode {
    if json {
        println!("{}", report.json());
        stderr_line!("{}", report.last_line());
    } else {
        print!("{}", report.text());
        println!("{}", report.last_line());
    }
    if let Some(why) = &report.void {
        stderr_line!("redquorum torture: the run is void: {why}");
        ExitCode::from(VOID)
    } else if report.violation_total() > 0 {
        ExitCode::from(VIOLATION)
    } else if !report.vacuous.is_empty() {
        stderr_line!(
            "redquorum torture: the run was vacuous, it proves nothing: {}",
            report.vacuous.join("; ")
        );
        ExitCode::from(VACUOUS)
    } else {
        ExitCode::SUCCESS
    }
}

/// `--recheck FILE`: the checker again over a saved run.
fn recheck(path: &std::path::Path, json: bool) -> ExitCode {
    match recheck::ran(path) {
        Ok(ran) => finish(&Report::new(&ran), json),
        Err(e) => {
            stderr_line!("redquorum torture: --recheck {}: {e}", path.display());
            exit::USAGE.into()
        }
    }
}
