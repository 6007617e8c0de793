//! `redquorum torture`: the workload under a random nemesis, then the
//! checker's verdict, as a readable (or JSON) report.
//!
//! The workload runner and checker live in the harness, generic over its
//! `Locker` trait; the library is driven through the same adapter as the
//! benchmarks (`redquorum_benches::RedquorumLocker`), with the owner and
//! fencing tokens in each grant for the checker.

mod report;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redquorum::Redlock;
use redquorum_benches::RedquorumLocker;
use redquorum_harness::{
    Cluster, FaultKind, History, Nemesis, NemesisConfig, Persistence, ProtectedStore, Proxies,
    WorkloadConfig, check, leaks_after, run_workload_into,
};

use crate::exit;
use crate::nodes_arg::NodesArg;
use crate::progress;
use crate::verbosity::Verbosity;

/// Options of `redquorum torture`.
#[derive(Debug, clap::Args)]
pub(crate) struct TortureArgs {
    /// How long clients keep locking.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Concurrent clients.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Resources the clients contend for.
    #[arg(long, default_value_t = 4)]
    resources: usize,
    /// Faults: `all`, or a comma list of kill,pause,latency,stall,reset,clock.
    #[arg(long, default_value = "all")]
    nemesis: String,
    /// Print the report as one JSON object on stdout (nothing else goes to
    /// stdout; the `sessions=N violations=N leaked=N` line goes to stderr).
    #[arg(long)]
    json: bool,
    /// Lock TTL: short, so faults bite.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    ttl: Duration,
    /// How many local nodes to start when no --nodes are given.
    #[arg(short = 'n', long, default_value_t = 5)]
    node_count: usize,
    /// `host:port` of a Redis for the protected counters (default: a local one started here).
    #[arg(long)]
    store: Option<String>,
    /// Random seed for clients and nemesis.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub(crate) async fn run(nodes: &NodesArg, args: TortureArgs, verbosity: Verbosity) -> ExitCode {
    match torture(nodes, args, verbosity).await {
        Ok(code) => code,
        Err(problem) => {
            eprintln!("redquorum torture: {problem}");
            exit::UNAVAILABLE.into()
        }
    }
}

async fn torture(
    nodes: &NodesArg,
    args: TortureArgs,
    verbosity: Verbosity,
) -> Result<ExitCode, String> {
    let kinds = match FaultKind::parse_list(&args.nemesis) {
        Ok(kinds) => kinds,
        Err(e) => {
            eprintln!("redquorum torture: --nemesis: {e}");
            return Ok(exit::USAGE.into());
        }
    };
    if args.clients == 0 || args.resources == 0 || args.ttl < Duration::from_millis(200) {
        eprintln!("redquorum torture: need --clients ≥ 1, --resources ≥ 1 and --ttl ≥ 200ms");
        return Ok(exit::USAGE.into());
    }
    // Local nodes keep an AOF (fsync every second): a killed node restarts at
    // once yet remembers its keys, so kill stays within Redlock's assumptions.
    let given: Vec<String> = nodes
        .0
        .iter()
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty())
        .collect();
    let cluster = if given.is_empty() {
        Cluster::start_with(args.node_count, Persistence::AofEverySec)
    } else {
        Cluster::external(given)
    }
    .map_err(|e| e.to_string())?;
    let cluster = Arc::new(cluster);
    let local_store = match &args.store {
        Some(_) => None,
        None => Some(Cluster::start(1).map_err(|e| format!("protected store: {e}"))?),
    };
    let store_addr = args
        .store
        .clone()
        .or_else(|| local_store.as_ref().map(|c| c.host_port(0)))
        .unwrap_or_default();
    let proxies = Arc::new(Proxies::start(&cluster).map_err(|e| format!("fault proxies: {e}"))?);
    let prefix = format!("redquorum-torture:{}:", std::process::id());
    let redlock = Redlock::builder()
        .nodes(proxies.urls())
        .ttl(args.ttl)
        .wait(args.ttl / 2)
        .node_timeout(Duration::from_millis(100))
        .retry_delay(Duration::from_millis(5))
        .retry_jitter(Duration::from_millis(20))
        .key_prefix(prefix.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let resources: Vec<String> = (0..args.resources).map(|i| format!("r{i}")).collect();
    let store = ProtectedStore::new(&store_addr);
    reset_store(&store, &resources)?;
    let config = WorkloadConfig {
        clients: args.clients,
        resources: resources.clone(),
        duration: args.duration,
        hold: (Duration::ZERO, Duration::from_millis(50)),
        // Write only with a quarter of the TTL left: margin for a loaded machine.
        write_margin: args.ttl / 4,
        seed: args.seed,
        ..WorkloadConfig::default()
    };
    let nemesis_config = NemesisConfig {
        kinds: kinds.clone(),
        // Up to a minority of the nodes at once.
        max_nodes: cluster.len() / 2,
        max_fault: args.ttl / 2,
        // Within the drift budget (ttl × 0.01 + 2 ms): a legal clock error.
        max_clock_jump: args.ttl / 100,
        key_pattern: format!("{prefix}*"),
        seed: args.seed,
        ..NemesisConfig::default()
    };
    eprintln!(
        "torture: {} nodes{}, {} clients × {} resources, ttl {:?}, nemesis {}, for {:?}",
        cluster.len(),
        if cluster.is_external() {
            " (given)"
        } else {
            " (local, AOF everysec)"
        },
        args.clients,
        args.resources,
        args.ttl,
        kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(","),
        args.duration
    );
    let started = Instant::now();
    let nemesis = if kinds.is_empty() {
        None
    } else {
        Some(Nemesis::start(
            cluster.clone(),
            proxies.clone(),
            nemesis_config,
        ))
    };
    let locker = Arc::new(RedquorumLocker::for_history(redlock));
    let history = History::new();
    let bar = progress::timed(verbosity, args.duration, "torture");
    let ticker = progress::tick_over_time(&bar);
    let counter = tokio::spawn(count_sessions(bar.clone(), history.clone()));
    let history = tokio::select! {
        history = run_workload_into(history, locker, store.clone(), &config) => history,
        _ = tokio::signal::ctrl_c() => {
            // Returning drops the nemesis (which resumes any paused node) and
            // the local cluster (which kills its nodes): nothing is left behind.
            eprintln!("torture: interrupted; stopping the nemesis and the local nodes");
            return Ok(ExitCode::from(130));
        }
    };
    bar.finish_and_clear();
    ticker.abort();
    counter.abort();
    let faults = match nemesis {
        Some(nemesis) => tokio::task::spawn_blocking(move || nemesis.stop())
            .await
            .map_err(|e| e.to_string())?,
        None => Default::default(),
    };
    proxies.heal_all();
    eprintln!("torture: faults healed; waiting for the lock keys to expire");
    // The TTL, plus 3 s for commands still in flight (a chunk the proxy was
    // delaying when healed lands up to its max latency later).
    let leaks = leaks_after(
        &cluster,
        &format!("{prefix}*"),
        args.ttl + Duration::from_secs(3),
    )
    .map_err(|e| e.to_string())?;
    let values = store
        .values(&resources)
        .map_err(|e| format!("protected store: {e}"))?;
    let sessions = history.sessions();
    let verdict = check(&sessions, &values, &leaks);
    let report = report::Report::new(&sessions, &faults, &verdict, &leaks, started.elapsed());
    if args.json {
        // stdout stays one JSON object; the summary line goes to stderr.
        let json = report.json().map_err(|e| format!("the JSON report: {e}"))?;
        println!("{json}");
        eprintln!("{}", report.last_line());
    } else {
        print!("{}", report.text());
        println!("{}", report.last_line());
    }
    Ok(if verdict.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Starts every protected counter at zero (a given store may hold an old run's).
fn reset_store(store: &ProtectedStore, resources: &[String]) -> Result<(), String> {
    for resource in resources {
        store
            .write_blocking(resource, 0)
            .map_err(|e| format!("protected store: {e}"))?;
    }
    Ok(())
}

/// Shows the sessions recorded so far on the progress bar, every 100 ms.
async fn count_sessions(bar: indicatif::ProgressBar, history: History) {
    let mut ticks = tokio::time::interval(Duration::from_millis(100));
    while !bar.is_finished() {
        ticks.tick().await;
        bar.set_message(format!("{} sessions", history.len()));
    }
}
