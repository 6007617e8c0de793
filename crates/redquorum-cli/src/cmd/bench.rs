//! `redquorum bench`: the benchmark workloads against your own nodes.
//!
//! The same code as the side-by-side benchmark (`redquorum-benches`), for
//! redquorum alone: A sequential, B parallel, C contended, C2 ping-pong.
//! With `--down K`, the workload runs twice on local nodes: all up, then
//! with K of them killed (or stopped, `--down-how stop`), and both are
//! printed with their ratio: what a dead node costs. With `--serve`, it
//! runs again through `redquorum serve` over HTTP (`through_serve.rs`),
//! beside the library asking every grant's token, as the service does.

mod through_serve;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use redquorum::{LockOptions, Redlock};
use redquorum_adapter::{KindLocker, LockKind};
use redquorum_benches::{Workload, run};

use crate::exit;
use crate::nodes_arg::NodesArg;
use crate::progress;
use crate::verbosity::Verbosity;

/// Which workload `redquorum bench` runs.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum WorkloadArg {
    /// A: one client, acquire + release on fresh resources, one at a time.
    Sequential,
    /// B: --tasks concurrent clients on distinct resources.
    Parallel,
    /// C: --tasks workers contend for one resource, holding it --hold each time.
    Contended,
    /// C2: two workers take turns on one resource, holding it --hold each time.
    Pingpong,
}

/// How `--down` takes nodes down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum DownHow {
    /// kill -9: connections refused from then on.
    Kill,
    /// SIGSTOP: connections stay open, nothing is answered.
    Stop,
}

/// Options of `redquorum bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// The workload.
    #[arg(long, value_enum, default_value = "sequential")]
    workload: WorkloadArg,
    /// Concurrent tasks (parallel) or workers (contended). Defaults: 64 and 16.
    #[arg(long)]
    tasks: Option<usize>,
    /// How long to run, e.g. 5s or 500ms.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// How long each critical section lasts (contended, pingpong).
    #[arg(long, default_value = "1ms", value_parser = humantime::parse_duration)]
    hold: Duration,
    /// Print one JSON object on stdout instead of text (nothing else goes to stdout).
    #[arg(long)]
    json: bool,
    /// How many local nodes to start when no --nodes are given.
    #[arg(short = 'n', long, default_value_t = 5)]
    node_count: usize,
    /// Take locks with fencing off: the acquire proposes no token (the bench
    /// never asks for one, so no write-back is measured either way).
    #[arg(long)]
    no_fence: bool,
    /// After the run with every node up, take this many local nodes down (a
    /// minority) and run again; both runs are printed, with their ratio
    /// (local nodes only).
    #[arg(long, value_name = "K")]
    down: Option<usize>,
    /// How --down takes nodes down.
    #[arg(long, value_enum, default_value = "kill")]
    down_how: DownHow,
    /// After the run on the library, run the workload twice more: the
    /// library asking every grant's fencing token, and through a
    /// `redquorum serve` this command starts on the same nodes (HTTP on
    /// loopback; one client connection per task); all are printed, with
    /// their ratios to the first.
    #[arg(long, conflicts_with = "down")]
    serve: bool,
}

pub(crate) async fn run_bench(nodes: &NodesArg, args: BenchArgs, verbosity: Verbosity) -> ExitCode {
    let workload = match args.workload {
        WorkloadArg::Sequential => Workload::Sequential,
        WorkloadArg::Parallel => Workload::Parallel {
            tasks: args.tasks.unwrap_or(64),
        },
        WorkloadArg::Contended => Workload::Contended {
            workers: args.tasks.unwrap_or(16),
            hold: args.hold,
        },
        WorkloadArg::Pingpong => Workload::PingPong { hold: args.hold },
    };
    if args.tasks == Some(0) || args.duration.is_zero() {
        stderr_line!("redquorum bench: --tasks and --duration must be above zero");
        return exit::USAGE.into();
    }
    if let Some(down) = args.down {
        // A majority down fails every call: there would be nothing to measure.
        if down == 0 || down > args.node_count / 2 {
            stderr_line!(
                "redquorum bench: --down must be between 1 and {} (a minority of the {} nodes)",
                args.node_count / 2,
                args.node_count
            );
            return exit::USAGE.into();
        }
        if !nodes.is_empty() {
            stderr_line!(
                "redquorum bench: --down takes local nodes down: it cannot be used with --nodes"
            );
            return exit::USAGE.into();
        }
    }
    let nodes = match nodes.given_or_local(args.node_count) {
        Ok(nodes) => nodes,
        Err(e) => {
            stderr_line!("redquorum bench: {e}");
            return exit::UNAVAILABLE.into();
        }
    };
    let redlock = match Redlock::builder()
        .nodes(nodes.urls())
        .lock_options(LockOptions {
            wait: Duration::from_secs(30),
            fencing: !args.no_fence,
            ..Default::default()
        })
        .build()
    {
        Ok(redlock) => redlock,
        Err(e) => {
            stderr_line!("redquorum bench: {e}");
            return exit::USAGE.into();
        }
    };
    if let Err(e) = redlock.try_lock("bench:probe").await.map(drop) {
        stderr_line!("redquorum bench: the nodes do not grant a lock: {e}");
        return exit::UNAVAILABLE.into();
    }
    let tag = format!("bench:{}:{}", std::process::id(), workload.name());
    let locker = Arc::new(KindLocker::new(redlock.clone(), LockKind::Plain));
    let handoff = matches!(
        workload,
        Workload::Contended { .. } | Workload::PingPong { .. }
    );
    let up = measure(&locker, workload, args.duration, &tag, verbosity).await;
    let mut beside = Vec::new();
    if args.serve {
        let ttl = redlock.options().ttl;
        let http = match through_serve::OverHttp::start(&nodes.urls(), ttl, Duration::from_secs(30))
        {
            Ok(http) => Arc::new(http),
            Err(e) => {
                stderr_line!("redquorum bench: cannot start redquorum serve: {e}");
                return exit::SOFTWARE.into();
            }
        };
        let token = Arc::new(through_serve::TokenEveryGrant(redlock.clone()));
        let (duration, token_tag, http_tag) =
            (args.duration, format!("{tag}:token"), format!("{tag}:http"));
        let sample = measure(&token, workload, duration, &token_tag, verbosity).await;
        beside.push((
            "library_token_every_grant",
            "the library, a token asked every grant",
            sample,
        ));
        let sample = measure(&http, workload, duration, &http_tag, verbosity).await;
        beside.push(("through_serve", "through redquorum serve over HTTP", sample));
    }
    let mut down = None;
    if let (Some(count_down), Some(cluster)) = (args.down, nodes.local()) {
        let count = nodes.urls().len();
        let struck: Vec<usize> = (count - count_down..count).collect();
        for &index in &struck {
            let struck = match args.down_how {
                DownHow::Kill => cluster.kill(index),
                DownHow::Stop => cluster.pause(index),
            };
            if let Err(e) = struck {
                stderr_line!("redquorum bench: cannot take node {index} down: {e}");
                return exit::SOFTWARE.into();
            }
        }
        let how = match args.down_how {
            DownHow::Kill => "killed",
            DownHow::Stop => "stopped",
        };
        let tag = format!("{tag}:down");
        let sample = measure(&locker, workload, args.duration, &tag, verbosity).await;
        if args.down_how == DownHow::Stop {
            struck.iter().for_each(|&index| drop(cluster.resume(index)));
        }
        down = Some((format!("{count_down} of {count} {how}"), sample));
    }
    if args.json {
        let json = match &down {
            None if !beside.is_empty() => {
                let mut report = serde_json::json!({"library": up.report(handoff)});
                for (key, _, sample) in &beside {
                    report[*key] = serde_json::json!(sample.report(handoff));
                    report[format!("{key}_cycles_per_sec_ratio")] = serde_json::json!(
                        redquorum_benches::round3(sample.cycles_per_sec() / up.cycles_per_sec())
                    );
                }
                serde_json::to_string(&report)
            }
            None => serde_json::to_string(&up.report(handoff)),
            Some((label, sample)) => serde_json::to_string(&serde_json::json!({
                "all_up": up.report(handoff),
                "down": label,
                "with_nodes_down": sample.report(handoff),
                "cycles_per_sec_ratio": redquorum_benches::round3(sample.cycles_per_sec() / up.cycles_per_sec()),
            })),
        };
        match json {
            Ok(json) => println!("{json}"),
            Err(e) => {
                stderr_line!("redquorum bench: cannot write the JSON report: {e}");
                return exit::SOFTWARE.into();
            }
        }
    } else {
        let nodes = nodes.urls().len();
        let label = if beside.is_empty() {
            "all up"
        } else {
            "the library, no token asked"
        };
        print_sample(workload, label, nodes, &up, handoff);
        for (_, label, sample) in &beside {
            print_sample(workload, label, nodes, sample, handoff);
            println!(
                "{label}: {:.2}x the cycles/s of the library's default, {:.2}x its acquire p99",
                sample.cycles_per_sec() / up.cycles_per_sec(),
                redquorum_benches::Sample::us(&sample.acquire, 0.99)
                    / redquorum_benches::Sample::us(&up.acquire, 0.99)
            );
        }
        if let Some((label, sample)) = &down {
            print_sample(workload, label, nodes, sample, handoff);
            println!(
                "with {label}: {:.2}x the cycles/s of all up",
                sample.cycles_per_sec() / up.cycles_per_sec()
            );
        }
    }
    let samples = (std::iter::once(&up).chain(down.as_ref().map(|(_, sample)| sample)))
        .chain(beside.iter().map(|(_, _, sample)| sample));
    let (errors, first) = samples.fold((0, None), |(errors, first), sample| {
        (
            errors + sample.errors,
            first.or(sample.first_error.as_deref()),
        )
    });
    if errors > 0 {
        stderr_line!(
            "redquorum bench: {errors} failed acquires or releases; the first: {}",
            first.unwrap_or("a worker task failed")
        );
        exit::SOFTWARE.into()
    } else {
        ExitCode::SUCCESS
    }
}

/// One run of `workload`, with a progress bar.
async fn measure<L: redquorum_benches::Locker>(
    locker: &Arc<L>,
    workload: Workload,
    duration: Duration,
    tag: &str,
    verbosity: Verbosity,
) -> redquorum_benches::Sample {
    let bar = progress::timed(verbosity, duration, workload.name());
    let ticker = progress::tick_over_time(&bar);
    let sample = run(Arc::clone(locker), workload, duration, tag).await;
    bar.finish_and_clear();
    ticker.abort();
    sample
}

/// One run's figures, as text.
fn print_sample(
    workload: Workload,
    label: &str,
    nodes: usize,
    sample: &redquorum_benches::Sample,
    handoff: bool,
) {
    let us = redquorum_benches::Sample::us;
    println!(
        "{} on {nodes} nodes ({label}) for {:?}: {} cycles, {:.0} cycles/s, {} errors",
        workload.name(),
        sample.elapsed,
        sample.cycles,
        sample.cycles_per_sec(),
        sample.errors
    );
    println!(
        "acquire p50 {:.0} µs, p99 {:.0} µs; release p50 {:.0} µs, p99 {:.0} µs; client CPU {:.1} µs/cycle",
        us(&sample.acquire, 0.5),
        us(&sample.acquire, 0.99),
        us(&sample.release, 0.5),
        us(&sample.release, 0.99),
        sample.cpu_us_per_cycle()
    );
    if handoff {
        println!(
            "hand-off (release start to next acquire) p50 {:.0} µs, p99 {:.0} µs",
            us(&sample.handoff, 0.5),
            us(&sample.handoff, 0.99)
        );
        if let Some(fair) = sample.fairness() {
            println!(
                "critical sections per client ({}): min {}, max {}, mean {:.1}; the least served got {:.0}% of the mean",
                fair.clients,
                fair.min,
                fair.max,
                fair.mean,
                fair.min_share() * 100.0
            );
        }
    }
}
