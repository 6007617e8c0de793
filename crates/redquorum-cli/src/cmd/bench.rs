//! `redquorum bench`: the benchmark workloads against your own nodes.
//!
//! The same code as the side-by-side benchmark (`redquorum-benches`), for
//! redquorum alone: A sequential, B parallel, C contended, C2 ping-pong.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use redquorum::{LockOptions, Redlock};
use redquorum_benches::{KindLocker, LockKind, Workload, run};

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
        eprintln!("redquorum bench: --tasks and --duration must be above zero");
        return exit::USAGE.into();
    }
    let nodes = match nodes.given_or_local(args.node_count) {
        Ok(nodes) => nodes,
        Err(e) => {
            eprintln!("redquorum bench: {e}");
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
            eprintln!("redquorum bench: {e}");
            return exit::USAGE.into();
        }
    };
    if let Err(e) = redlock.try_lock("bench:probe").await.map(drop) {
        eprintln!("redquorum bench: the nodes do not grant a lock: {e}");
        return exit::UNAVAILABLE.into();
    }
    let tag = format!("bench:{}:{}", std::process::id(), workload.name());
    let locker = Arc::new(KindLocker::new(redlock, LockKind::Plain));
    let bar = progress::timed(verbosity, args.duration, workload.name());
    let ticker = progress::tick_over_time(&bar);
    let sample = run(locker, workload, args.duration, &tag).await;
    bar.finish_and_clear();
    ticker.abort();
    let handoff = matches!(
        workload,
        Workload::Contended { .. } | Workload::PingPong { .. }
    );
    if args.json {
        match serde_json::to_string(&sample.report(handoff)) {
            Ok(json) => println!("{json}"),
            Err(e) => {
                eprintln!("redquorum bench: cannot write the JSON report: {e}");
                return exit::SOFTWARE.into();
            }
        }
    } else {
        let us = redquorum_benches::Sample::us;
        println!(
            "{} on {} nodes for {:?}: {} cycles, {:.0} cycles/s, {} errors",
            workload.name(),
            nodes.urls().len(),
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
        }
    }
    if sample.errors > 0 {
        eprintln!(
            "redquorum bench: {} failed acquires or releases; the first: {}",
            sample.errors,
            sample
                .first_error
                .as_deref()
                .unwrap_or("a worker task failed")
        );
        exit::SOFTWARE.into()
    } else {
        ExitCode::SUCCESS
    }
}
