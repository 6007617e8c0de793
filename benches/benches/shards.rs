//! Cluster masters against single servers: redquorum's default plain lock
//! on N = 5 masters that are single `redis-server`s, then Redis Clusters of
//! 1, 2 and 3 shards each (`redis-cluster://`), in one run, each case
//! repeated; prints medians of cycles/s, the client's and the servers' CPU
//! per cycle, each shard process's rate, and the ratio to single servers.
//!
//! ```sh
//! cargo bench -p redquorum-benches --bench shards              # ~2 min
//! cargo bench -p redquorum-benches --bench shards -- --quick   # ~30 s
//! ```
//!
//! Every process shares this machine's cores, so cycles/s cannot grow with
//! shards here: the figures that carry to a machine with a core per shard
//! are the CPU per cycle and the per-shard rate (docs/performance.md has
//! the model). Under `cargo test` (no `--bench`) it makes one short smoke
//! pass instead, to prove every case runs.

use std::sync::Arc;
use std::time::Duration;

use redquorum::Redlock;
use redquorum_adapter::{KindLocker, LockKind};
use redquorum_benches::{CommandStats, Sample, Workload, median, run};
use redquorum_harness::{Cluster, ShardedCluster};

/// Masters in every case.
const N: usize = 5;
const NODE_TIMEOUT: Duration = Duration::from_millis(200);

/// One case: its name, shards per master (0: single servers).
const CASES: [(&str, usize); 4] = [
    ("single", 0),
    ("cluster-1", 1),
    ("cluster-2", 2),
    ("cluster-3", 3),
];

/// The nodes of one case, kept alive while it runs.
enum Masters {
    Single(Cluster),
    Sharded(ShardedCluster),
}

impl Masters {
    fn start(shards: usize) -> Self {
        if shards == 0 {
            Masters::Single(Cluster::start(N).expect("start 5 redis-server nodes"))
        } else {
            Masters::Sharded(
                ShardedCluster::start(N, shards, 0).expect("start 5 local Redis Clusters"),
            )
        }
    }

    fn urls(&self) -> Vec<String> {
        match self {
            Masters::Single(cluster) => cluster.urls(),
            Masters::Sharded(masters) => masters.urls(),
        }
    }

    /// A plain URL per server process, for `INFO cpu`.
    fn process_urls(&self) -> Vec<String> {
        match self {
            Masters::Single(cluster) => cluster.urls(),
            Masters::Sharded(masters) => (0..masters.len())
                .flat_map(|m| {
                    let master = masters.master(m);
                    (0..master.len()).map(|i| master.url(i)).collect::<Vec<_>>()
                })
                .collect(),
        }
    }
}

/// The medians of one case's figures over the repeats.
#[derive(Default)]
struct Figures {
    cycles_per_sec: Vec<f64>,
    client_cpu: Vec<f64>,
    server_cpu: Vec<f64>,
}

/// One measurement: the default plain lock, `workload`, for `duration`.
async fn measure(
    urls: &[String],
    processes: &[String],
    workload: Workload,
    duration: Duration,
) -> (Sample, f64) {
    let redlock = Redlock::builder()
        .nodes(urls)
        .node_timeout(NODE_TIMEOUT)
        .ttl(Duration::from_secs(10))
        .build()
        .expect("valid configuration");
    let locker = Arc::new(KindLocker::new(redlock, LockKind::Plain));
    // Untimed: connecting, the slot maps and the script loads.
    let _ = run(
        Arc::clone(&locker),
        Workload::Sequential,
        Duration::from_millis(200),
        "shards:warm",
    )
    .await;
    let stats = CommandStats::connect(processes)
        .await
        .expect("INFO on every process");
    let before = stats.cpu_us().await.expect("INFO cpu");
    let tag = format!("shards:{}:{}", std::process::id(), workload.name());
    let sample = run(locker, workload, duration, &tag).await;
    let after = stats.cpu_us().await.expect("INFO cpu");
    let server = (after - before).max(0.0) / sample.cycles.max(1) as f64;
    (sample, server)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench");
    let quick = args.iter().any(|a| a == "--quick") || !bench;
    let repeats = if bench && !quick { 3 } else { 1 };
    let duration = if bench {
        Duration::from_secs(if quick { 2 } else { 5 })
    } else {
        Duration::from_millis(300)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let workloads = [
        ("A", Workload::Sequential),
        ("B", Workload::Parallel { tasks: 64 }),
    ];
    let mut table: Vec<(&str, &str, usize, Figures)> = Vec::new();
    for (name, shards) in CASES {
        let masters = Masters::start(shards);
        let (urls, processes) = (masters.urls(), masters.process_urls());
        for (key, workload) in workloads {
            let mut figures = Figures::default();
            for _ in 0..repeats {
                let (sample, server) =
                    runtime.block_on(measure(&urls, &processes, workload, duration));
                assert!(
                    sample.errors == 0 || bench,
                    "{name} {key}: {} errors, first: {:?}",
                    sample.errors,
                    sample.first_error
                );
                figures.cycles_per_sec.push(sample.cycles_per_sec());
                figures.client_cpu.push(sample.cpu_us_per_cycle());
                figures.server_cpu.push(server);
            }
            eprintln!(
                "{name} {key}: {:.0} cycles/s",
                median(&figures.cycles_per_sec)
            );
            table.push((key, name, shards, figures));
        }
        drop(masters);
    }
    println!(
        "shards: N = {N} masters, default plain lock, medians of {repeats} run(s) of {} s; ratios to single servers in the same run",
        duration.as_secs_f64()
    );
    println!(
        "| workload | masters | cycles/s | ratio | client CPU µs/cycle | servers' CPU µs/cycle | ratio | ops/s per shard process |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (key, name, shards, figures) in &table {
        let base = table
            .iter()
            .find(|(k, _, s, _)| k == key && *s == 0)
            .map(|(_, _, _, f)| f)
            .expect("the single-server case ran");
        let cps = median(&figures.cycles_per_sec);
        let server = median(&figures.server_cpu);
        // Each cycle is one acquire and one release on every master; a
        // master's shards share them.
        let per_shard = 2.0 * cps / (*shards).max(1) as f64;
        println!(
            "| {key} | {name} | {cps:.0} | {:.2} | {:.0} | {server:.0} | {:.2} | {per_shard:.0} |",
            cps / median(&base.cycles_per_sec),
            median(&figures.client_cpu),
            server / median(&base.server_cpu),
        );
    }
}
