//! The torture against a peer library: `redquorum torture`'s default run
//! (`plan.rs`) around the `rslock` crate (`rslock.rs`) or, for the same run
//! side by side, redquorum's plain lock (`ours.rs`), one fault kind at a
//! time. An example of the benches package, because rslock is only its
//! dev-dependency: the `redquorum` binary never builds it.
//!
//! ```sh
//! cargo run -q -p redquorum-benches --example torture_peer -- --lock rslock --nemesis stall
//! cargo run -q -p redquorum-benches --example torture_peer -- --lock redquorum --nemesis stall --no-fencing
//! ```
//!
//! Options: `--lock rslock|redquorum` (rslock), `--nemesis all|none|K,K`
//! (`all`: every kind within the assumptions), `--duration D` (60s),
//! `--seed N` (1), `--fault-gap D` (0–300 ms at random), `--no-fencing`
//! (redquorum; rslock has no token, so its store is always unfenced),
//! `--history FILE` (the run as JSON lines: `redquorum torture --recheck
//! FILE` prints the full report), `--recheck FILE` (this summary of a saved
//! run). It prints one summary line (violations by kind, the first's time,
//! and those the unfenced paused holder does not explain: `summary.rs`),
//! two of them, and last `sessions=N violations=N leaked=N`. Exit status as `redquorum torture`:
//! 0 clean, 1 a violation, 2 vacuous, 64 usage, 69 setup.

mod ours;
mod plan;
mod rslock;
mod summary;

use std::process::ExitCode;
use std::time::Duration;

use redquorum_harness::{FaultKind, HistoryFile, TortureLock, TorturePlan, TortureRun};

/// What the command line asked for.
struct Args {
    lock: String,
    kinds: Vec<FaultKind>,
    nemesis: String,
    duration: Duration,
    seed: u64,
    fault_gap: Option<Duration>,
    fenced: bool,
    history: Option<String>,
    recheck: Option<String>,
}

/// `60s`, `500ms`, `2m`.
fn duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number
        .parse()
        .map_err(|_| format!("not a duration: {text}"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        _ => Err(format!("not a duration (ms, s or m): {text}")),
    }
}

fn parse(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = Args {
        lock: "rslock".to_owned(),
        kinds: FaultKind::SAFE.to_vec(),
        nemesis: "all".to_owned(),
        duration: Duration::from_secs(60),
        seed: 1,
        fault_gap: None,
        fenced: true,
        history: None,
        recheck: None,
    };
    while let Some(flag) = argv.next() {
        if flag == "--no-fencing" {
            args.fenced = false;
            continue;
        }
        let value = argv.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--lock" if value == "rslock" || value == "redquorum" => args.lock = value,
            "--nemesis" => {
                args.kinds = match value.as_str() {
                    "all" => FaultKind::SAFE.to_vec(),
                    "none" => Vec::new(),
                    list => list
                        .split(',')
                        .map(|k| k.parse().map_err(|_| format!("unknown fault kind {k}")))
                        .collect::<Result<_, String>>()?,
                };
                args.nemesis = value;
            }
            "--duration" => args.duration = duration(&value)?,
            "--seed" => args.seed = value.parse().map_err(|_| format!("bad seed {value}"))?,
            "--fault-gap" => args.fault_gap = Some(duration(&value)?),
            "--history" => args.history = Some(value),
            "--recheck" => args.recheck = Some(value),
            _ => return Err(format!("unknown option {flag} {value}")),
        }
    }
    if args.lock == "rslock" {
        // No token to check: a fenced store would turn every holder away.
        args.fenced = false;
    }
    Ok(args)
}

/// The plan for `lock` from the command line.
fn plan_for<L>(lock: L, args: &Args) -> TorturePlan<L> {
    let mut plan = plan::default_plan(
        lock,
        args.kinds.clone(),
        args.duration,
        args.seed,
        args.fenced,
    );
    if let Some(gap) = args.fault_gap {
        plan.fault_gap = (gap, gap);
    }
    plan.quiet = false;
    plan.command = std::env::args().collect::<Vec<_>>().join(" ");
    plan
}

async fn execute<L: TortureLock>(plan: TorturePlan<L>) -> Result<TortureRun, String> {
    plan.execute().await.map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("torture_peer: {problem}");
            return ExitCode::from(64);
        }
    };
    if let Some(path) = &args.recheck {
        return match HistoryFile::load(std::path::Path::new(path)) {
            Ok(file) => report(&TortureRun::recheck(file)),
            Err(e) => {
                eprintln!("torture_peer: --recheck {path}: {e}");
                ExitCode::from(64)
            }
        };
    }
    let ran = if args.lock == "rslock" {
        execute(plan_for(rslock::Rslock, &args)).await
    } else {
        execute(plan_for(ours::Ours, &args)).await
    };
    let ran = match ran {
        Ok(ran) => ran,
        Err(problem) => {
            eprintln!("torture_peer: {problem}");
            return ExitCode::from(69);
        }
    };
    if let Some(path) = &args.history {
        if let Err(e) = ran.file.save(std::path::Path::new(path)) {
            eprintln!("torture_peer: --history {path}: {e}");
        }
    }
    report(&ran)
}

/// The summary lines; the exit status.
fn report(ran: &TortureRun) -> ExitCode {
    let info = &ran.file.info;
    println!(
        "lock={} store={} nemesis={} seed={} {}",
        info.lock_kind,
        if info.fenced_store {
            "fenced"
        } else {
            "unfenced"
        },
        if info.nemesis.is_empty() {
            "none".to_owned()
        } else {
            info.nemesis.join(",")
        },
        info.seed,
        summary::line(ran),
    );
    for violation in summary::examples(ran) {
        println!("  {violation}");
    }
    let (violations, leaked) = (ran.verdict.violations.len(), ran.file.leaked.len());
    println!(
        "sessions={} violations={violations} leaked={leaked}{}",
        ran.exercised.sessions,
        if ran.vacuous.is_empty() {
            ""
        } else {
            " vacuous"
        }
    );
    if violations > 0 || leaked > 0 {
        ExitCode::from(1)
    } else if !ran.vacuous.is_empty() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_options_parse() {
        assert_eq!(duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(duration("5h").is_err());
        let argv = [
            "--nemesis",
            "stall,kill",
            "--no-fencing",
            "--lock",
            "redquorum",
        ];
        let args = parse(argv.iter().map(|s| (*s).to_owned())).unwrap();
        assert_eq!(args.kinds, vec![FaultKind::Stall, FaultKind::Kill]);
        assert!(!args.fenced);
        let rslock = parse(std::iter::empty()).unwrap();
        assert!(!rslock.fenced, "rslock has no token: always unfenced");
        assert!(parse(["--lock", "other"].iter().map(|s| (*s).to_owned())).is_err());
    }
}
