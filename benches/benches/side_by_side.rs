//! The side-by-side benchmark: the floor (a raw fred fan-out of the cycle's
//! commands), redquorum with its default options (fencing on), redquorum
//! with fencing off, with a token asked every cycle, with `eager_fence`,
//! its other lock kinds, and the `rslock`
//! crate, on the same local nodes in the same run, each measurement
//! repeated; prints medians and the ratios redquorum/floor and
//! redquorum/peer.
//!
//! ```sh
//! cargo bench -p redquorum-benches --bench side_by_side -- --quick   # ~1 min
//! cargo bench -p redquorum-benches --bench side_by_side              # ~3 min
//! cargo bench -p redquorum-benches --bench side_by_side -- --json    # one JSON object
//! ```
//!
//! With local nodes it also measures what nodes that are down cost: A, B
//! and C2 with one of the five killed (`kill -9`), one stopped (SIGSTOP,
//! redquorum only: rslock has no per-node timeout and would hang), and two
//! killed, beside the all-up figures of the same repeat (`--only down`).
//!
//! Options: `--quick`, `--json`, `--repeats N` (default 3), `--only A,B,C,C2,D,down`,
//! `--libs floor,redquorum,redquorum-nofence,redquorum-token,redquorum-eager,rslock,reentrant,write,any-of,all-of,semaphore,election`
//! (the other lock kinds run A, C and C2 only); `REDQUORUM_NODES` (9 or more URLs) to
//! use nodes started elsewhere. Without
//! `--bench` on the command line (that is, under `cargo test`) it makes one
//! very short smoke pass instead, to prove every workload runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redquorum::{LockOptions, Redlock};
use redquorum_adapter::{KindLocker, LockKind};
use redquorum_benches::{
    CommandStats, Fairness, Floor, Grant, Locker, OwnCalls, Refusal, Sample, Workload, median,
    round3, run,
};
use redquorum_harness::Cluster;

const TTL: Duration = Duration::from_secs(10);
const NODE_TIMEOUT: Duration = Duration::from_millis(200);
const HOLD: Duration = Duration::from_millis(1);
const SIZES: [usize; 4] = [3, 5, 7, 9];
/// A, B, C and C2 run on this many nodes.
const N: usize = 5;
/// The target text of a figure shown for information only.
const INFO: &str = "(info)";
/// redquorum with `LockOptions::fencing` off, beside the default.
const NO_FENCE: &str = "redquorum-nofence";
/// The default redquorum, its fencing token asked for on every grant
/// (`Lock::fence`), beside the default that never asks.
const TOKEN: &str = "redquorum-token";
/// redquorum with `LockOptions::eager_fence` (every acquire proposes a
/// token: the default before tokens on demand), token not asked.
const EAGER: &str = "redquorum-eager";

/// `rslock` as shipped: `LockManager::acquire` (retries every random 0-200 ms) and `unlock`.
struct Rslock(rslock::LockManager);

impl Locker for Rslock {
    type Held = rslock::LockGuard;

    async fn acquire(&self, resource: &str) -> Result<Grant<rslock::LockGuard>, Refusal> {
        let guard = self
            .0
            .acquire(resource, TTL)
            .await
            .map_err(|e| Refusal::new("other", e.to_string()))?;
        // Its validity counts from before its first send; this deadline, from
        // after the grant, is a little late (the bench keeps no history).
        let validity = Duration::from_millis(guard.lock.validity_time as u64);
        Ok(Grant::new(guard, String::new(), Instant::now() + validity))
    }

    async fn release(&self, held: rslock::LockGuard) -> Result<(), String> {
        held.release().await;
        Ok(())
    }

    fn client_commands(&self) -> &'static [&'static str] {
        // rslock sends SET NX PX itself; its unlock script runs GET and DEL inside.
        &["set", "evalsha", "eval", "script|load", "ping"]
    }
}

#[derive(Clone, Copy)]
struct Plan {
    repeats: usize,
    a: Duration,
    b: Duration,
    c: Duration,
    d: Duration,
}

impl Plan {
    fn from_args(args: &[String]) -> Self {
        let repeats = args
            .iter()
            .position(|a| a == "--repeats")
            .and_then(|i| args.get(i + 1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(3);
        let secs = Duration::from_secs_f64;
        if !args.iter().any(|a| a == "--bench") {
            // Under `cargo test`: a smoke pass only.
            return Plan {
                repeats: 1,
                a: secs(0.2),
                b: secs(0.2),
                c: secs(0.3),
                d: secs(0.1),
            };
        }
        if args.iter().any(|a| a == "--quick") {
            Plan {
                repeats,
                a: secs(0.7),
                b: secs(0.7),
                c: secs(1.0),
                d: secs(0.4),
            }
        } else {
            Plan {
                repeats,
                a: secs(2.0),
                b: secs(2.0),
                c: secs(3.0),
                d: secs(1.0),
            }
        }
    }
}

/// Medians over repeats of one (workload, library) cell.
#[derive(Default)]
struct Cell {
    samples: Vec<Sample>,
    /// Client requests per cycle, when measured.
    requests: Vec<f64>,
    /// The nodes' CPU (user + system, all nodes) µs per cycle, when measured.
    server_cpu: Vec<f64>,
}

impl Cell {
    fn med(&self, f: impl Fn(&Sample) -> f64) -> f64 {
        median(&self.samples.iter().map(f).collect::<Vec<_>>())
    }
    fn cps(&self) -> f64 {
        self.med(Sample::cycles_per_sec)
    }
    fn cpu(&self) -> f64 {
        self.med(Sample::cpu_us_per_cycle)
    }
    fn acq(&self, q: f64) -> f64 {
        self.med(|s| Sample::us(&s.acquire, q))
    }
    fn rel(&self, q: f64) -> f64 {
        self.med(|s| Sample::us(&s.release, q))
    }
    fn gap(&self, q: f64) -> f64 {
        self.med(|s| Sample::us(&s.handoff, q))
    }
    fn req(&self) -> f64 {
        median(&self.requests)
    }
    fn server_cpu(&self) -> f64 {
        median(&self.server_cpu)
    }
    fn errors(&self) -> u64 {
        self.samples.iter().map(|s| s.errors).sum()
    }
    /// Median over repeats of a fairness figure (NaN without clients).
    fn fair(&self, f: impl Fn(&Fairness) -> f64) -> f64 {
        self.med(|s| s.fairness().as_ref().map_or(f64::NAN, &f))
    }
}

type Results = BTreeMap<(String, &'static str), Cell>;

static RUN: AtomicU64 = AtomicU64::new(0);

/// The workloads named by `--only A,B,...` (all when absent).
static ONLY: std::sync::OnceLock<Option<Vec<String>>> = std::sync::OnceLock::new();

/// The libraries named by `--libs floor,redquorum,rslock` (all when absent).
static LIBS: std::sync::OnceLock<Option<Vec<String>>> = std::sync::OnceLock::new();

/// The calls redquorum counts itself (its lock calls: the servers would
/// count a batched script's inner `SET` as a request of its own).
static OWN_CALLS: std::sync::OnceLock<Option<OwnCalls>> = std::sync::OnceLock::new();

fn lib_selected(lib: &str) -> bool {
    match LIBS.get().and_then(Option::as_ref) {
        Some(libs) => libs.iter().any(|l| l == lib),
        None => true,
    }
}

fn selected(key: &str) -> bool {
    match ONLY.get().and_then(Option::as_ref) {
        // "D" selects every D<n>; "down" every case with nodes down.
        Some(only) => only.iter().any(|o| {
            o == key || (o == "D" && key.starts_with('D')) || (o == "down" && key.contains(' '))
        }),
        None => true,
    }
}

/// A resource name prefix no earlier run used.
fn tag(lib: &str, workload: &str) -> String {
    format!(
        "bench:{}:{lib}:{workload}:{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    )
}

/// A few untimed cycles, so connecting and script loading are not measured.
async fn warm_up<L: Locker>(locker: &Arc<L>) {
    let _ = run(
        Arc::clone(locker),
        Workload::Sequential,
        Duration::from_millis(100),
        &tag("warm", "up"),
    )
    .await;
}

async fn measure<L: Locker>(
    results: &mut Results,
    key: &str,
    lib: &'static str,
    locker: &Arc<L>,
    workload: Workload,
    duration: Duration,
    stats: Option<&CommandStats>,
) {
    if !selected(key) || !lib_selected(lib) {
        return;
    }
    let commands = locker.client_commands();
    // B's 64 tasks would blur the requests per cycle; the CPU is counted for all.
    let count_requests = !matches!(workload, Workload::Parallel { .. });
    // redquorum's lock calls are its own count; its other commands (the
    // subscriptions) the servers'.
    let own =
        (OWN_CALLS.get().and_then(Option::as_ref)).filter(|_| !matches!(lib, "floor" | "rslock"));
    let own_before = own.map_or(0, OwnCalls::total);
    let before = match stats {
        Some(stats) if count_requests => stats.calls(commands).await.ok(),
        _ => None,
    };
    let cpu_before = match stats {
        Some(stats) => stats.cpu_us().await.ok(),
        None => None,
    };
    let sample = run(
        Arc::clone(locker),
        workload,
        duration,
        &tag(lib, workload.name()),
    )
    .await;
    let cell = results.entry((key.to_owned(), lib)).or_default();
    // The INFO calls themselves are not in `commands`.
    if let (Some(stats), Some(before)) = (stats, before)
        && let Ok(after) = stats.calls(commands).await
    {
        let own = own.map_or(0, OwnCalls::total) - own_before;
        let requests = (after.saturating_sub(before) + own) as f64 / sample.cycles.max(1) as f64;
        cell.requests.push(requests);
    }
    if let (Some(stats), Some(before)) = (stats, cpu_before)
        && let Ok(after) = stats.cpu_us().await
    {
        cell.server_cpu
            .push((after - before).max(0.0) / sample.cycles.max(1) as f64);
    }
    cell.samples.push(sample);
}

/// redquorum as a user gets it: the default options (fencing on: each node
/// proposes a token in the acquire call; the token is written back only when
/// asked for, which these workloads do not), or with `fencing` off.
fn redlock(urls: &[String], fencing: bool) -> Redlock {
    Redlock::builder()
        .nodes(urls)
        .node_timeout(NODE_TIMEOUT)
        .lock_options(LockOptions {
            ttl: TTL,
            wait: Duration::from_secs(30),
            fencing,
            ..Default::default()
        })
        .build()
        .expect("valid configuration")
}

/// [`redlock`] with fencing on and `eager_fence` set.
fn eager_redlock(urls: &[String]) -> Redlock {
    let redlock = redlock(urls, true);
    let options = LockOptions {
        eager_fence: true,
        ..*redlock.options()
    };
    redlock.with_options(&options).expect("valid configuration")
}

fn rslock(urls: &[String]) -> Rslock {
    Rslock(rslock::LockManager::new(urls.to_vec()))
}

/// The workloads named in `keys` (of A, B, C, C2) on one library; requests
/// are counted for A, C and C2 (B's 64 tasks would blur them), the nodes'
/// CPU for all four.
async fn measure_library<L: Locker>(
    results: &mut Results,
    lib: &'static str,
    locker: &Arc<L>,
    plan: Plan,
    stats: &CommandStats,
    keys: &[&str],
) {
    let contended = Workload::Contended {
        workers: 16,
        hold: HOLD,
    };
    let workloads = [
        ("A", Workload::Sequential, plan.a),
        ("B", Workload::Parallel { tasks: 64 }, plan.b),
        ("C", contended, plan.c),
        ("C2", Workload::PingPong { hold: HOLD }, plan.c),
    ];
    for (key, workload, duration) in workloads {
        if keys.contains(&key) {
            measure(results, key, lib, locker, workload, duration, Some(stats)).await;
        }
    }
}

/// Every workload; the floor does not wait for a held resource (no C or C2);
/// the other lock kinds are compared on A, C and C2.
const ALL: &[&str] = &["A", "B", "C", "C2"];
const NO_WAIT: &[&str] = &["A", "B"];
const KIND: &[&str] = &["A", "C", "C2"];

/// One repeat of every workload; the library order rotates between repeats
/// so that a drift in machine load does not always favour the same one.
async fn repeat(results: &mut Results, urls: &[String], plan: Plan, round: usize) {
    let five = &urls[..N];
    let stats = CommandStats::connect(five)
        .await
        .expect("INFO on the nodes");
    let floor = Arc::new(
        Floor::connect(five, NODE_TIMEOUT, TTL)
            .await
            .expect("floor connects"),
    );
    let ours = Arc::new(KindLocker::new(redlock(five, true), LockKind::Plain));
    let unfenced = Arc::new(KindLocker::new(redlock(five, false), LockKind::Plain));
    let token = Arc::new(KindLocker::for_history(
        redlock(five, true),
        LockKind::Plain,
    ));
    let eager = Arc::new(KindLocker::new(eager_redlock(five), LockKind::Plain));
    let peer = Arc::new(rslock(five));
    warm_up(&eager).await;
    warm_up(&floor).await;
    warm_up(&ours).await;
    warm_up(&unfenced).await;
    warm_up(&token).await;
    warm_up(&peer).await;
    for turn in 0..6 {
        match (turn + round) % 6 {
            0 => measure_library(results, "floor", &floor, plan, &stats, NO_WAIT).await,
            1 => measure_library(results, "redquorum", &ours, plan, &stats, ALL).await,
            2 => measure_library(results, NO_FENCE, &unfenced, plan, &stats, ALL).await,
            3 => measure_library(results, TOKEN, &token, plan, &stats, NO_WAIT).await,
            4 => measure_library(results, EAGER, &eager, plan, &stats, NO_WAIT).await,
            _ => measure_library(results, "rslock", &peer, plan, &stats, ALL).await,
        }
    }
    // Every other lock kind (fenced, the default): A, C and C2 beside the plain lock's.
    for kind in LockKind::BESIDE_PLAIN {
        let locker = Arc::new(KindLocker::new(redlock(five, true), kind));
        warm_up(&locker).await;
        measure_library(results, kind.name(), &locker, plan, &stats, KIND).await;
    }
    for n in SIZES {
        let nodes = &urls[..n];
        let key = format!("D{n}");
        let floor = Arc::new(
            Floor::connect(nodes, NODE_TIMEOUT, TTL)
                .await
                .expect("floor connects"),
        );
        let ours = Arc::new(KindLocker::new(redlock(nodes, true), LockKind::Plain));
        let peer = Arc::new(rslock(nodes));
        warm_up(&floor).await;
        warm_up(&ours).await;
        warm_up(&peer).await;
        for turn in 0..3 {
            let d = Workload::Sequential;
            match (turn + round) % 3 {
                0 => measure(results, &key, "floor", &floor, d, plan.d, None).await,
                1 => measure(results, &key, "redquorum", &ours, d, plan.d, None).await,
                _ => measure(results, &key, "rslock", &peer, d, plan.d, None).await,
            }
        }
    }
}

/// How [`down_cases`] takes nodes down.
#[derive(Clone, Copy)]
enum Strike {
    Kill,
    Stop,
}

/// The node-down cases: a label, how, and which of the five nodes.
const DOWN_CASES: [(&str, Strike, &[usize]); 3] = [
    ("1-dead", Strike::Kill, &[4]),
    ("1-stopped", Strike::Stop, &[4]),
    ("2-dead", Strike::Kill, &[3, 4]),
];

/// A, B and C2 with nodes down, for redquorum (default options) and, where
/// it does not hang, rslock; fresh clients each time, so each case starts
/// by finding the nodes down. The nodes are brought back afterwards.
async fn down_cases(results: &mut Results, cluster: &Cluster, plan: Plan) {
    if cluster.is_external() || !selected("down") {
        return;
    }
    let urls = cluster.urls();
    let five = &urls[..N];
    for (label, strike, struck) in DOWN_CASES {
        let ours = Arc::new(KindLocker::new(redlock(five, true), LockKind::Plain));
        let peer = Arc::new(rslock(five));
        warm_up(&ours).await;
        warm_up(&peer).await;
        for &node in struck {
            match strike {
                Strike::Kill => cluster.kill(node).expect("kill a node"),
                Strike::Stop => cluster.pause(node).expect("stop a node"),
            }
        }
        let workloads = [
            ("A", Workload::Sequential, plan.a),
            ("B", Workload::Parallel { tasks: 64 }, plan.b),
            ("C2", Workload::PingPong { hold: HOLD }, plan.c),
        ];
        for (key, workload, duration) in workloads {
            let key = format!("{key} {label}");
            measure(results, &key, "redquorum", &ours, workload, duration, None).await;
            if matches!(strike, Strike::Kill) {
                measure(results, &key, "rslock", &peer, workload, duration, None).await;
            }
        }
        for &node in struck {
            match strike {
                Strike::Kill => cluster.restart(node).expect("restart a node"),
                Strike::Stop => cluster.resume(node).expect("resume a node"),
            }
        }
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    a / b
}

fn f(v: f64) -> String {
    if v.is_finite() {
        if v >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        }
    } else {
        "-".into()
    }
}

fn print_table(results: &Results, plan: Plan) {
    let get = |k: &str, lib: &'static str| results.get(&(k.to_owned(), lib));
    println!(
        "\nmedians of {} repeats; latencies in µs; cpu = client CPU µs per cycle; server cpu = the nodes' CPU µs per cycle\n",
        plan.repeats
    );
    println!(
        "| workload | library | cycles/s | acquire p50 | acquire p99 | release p50 | release p99 | cpu/cycle | server cpu/cycle | requests/cycle | hand-off p50 | hand-off p99 | errors |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut keys: Vec<&String> = results.keys().map(|(k, _)| k).collect();
    keys.dedup();
    for key in keys {
        let kinds = LockKind::BESIDE_PLAIN.map(LockKind::name);
        for lib in ["floor", "redquorum", NO_FENCE, TOKEN, EAGER, "rslock"]
            .into_iter()
            .chain(kinds)
        {
            if let Some(c) = get(key, lib) {
                println!(
                    "| {key} | {lib} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    f(c.cps()),
                    f(c.acq(0.5)),
                    f(c.acq(0.99)),
                    f(c.rel(0.5)),
                    f(c.rel(0.99)),
                    f(c.cpu()),
                    f(c.server_cpu()),
                    f(c.req()),
                    f(c.gap(0.5)),
                    f(c.gap(0.99)),
                    c.errors()
                );
            }
        }
    }
    let kinds = LockKind::BESIDE_PLAIN.map(LockKind::name);
    let contended: Vec<_> = ["redquorum", NO_FENCE, "rslock"]
        .into_iter()
        .chain(kinds)
        .filter_map(|lib| get("C", lib).map(|c| (lib, c)))
        .collect();
    if !contended.is_empty() {
        println!(
            "\ncritical sections per client under contention (C: 16 workers on one name), medians of the repeats\n"
        );
        println!("| library | clients | min | max | mean | min / mean |");
        println!("|---|---|---|---|---|---|");
    }
    for (lib, c) in contended {
        println!(
            "| {lib} | {} | {} | {} | {} | {} |",
            f(c.fair(|x| x.clients as f64)),
            f(c.fair(|x| x.min as f64)),
            f(c.fair(|x| x.max as f64)),
            f(c.fair(|x| x.mean)),
            f(c.fair(Fairness::min_share))
        );
    }
    println!("\nratios (same run) and targets\n");
    println!("| check | measured | target | met |");
    println!("|---|---|---|---|");
    for (name, value, target, met) in checks(results) {
        println!(
            "| {name} | {} | {target} | {} |",
            f(value),
            match met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            }
        );
    }
}

/// (name, value, target text, met) for every target of the issue; `met` is
/// `None` for a figure shown for information, with no target.
fn checks(results: &Results) -> Vec<(String, f64, &'static str, Option<bool>)> {
    let get = |k: &str, lib: &'static str| results.get(&(k.to_owned(), lib));
    let mut out = Vec::new();
    let mut push = |name: &str, value: f64, target: &'static str, met: Option<bool>| {
        out.push((name.to_owned(), value, target, met));
    };
    if let (Some(q), Some(fl), Some(p)) =
        (get("A", "redquorum"), get("A", "floor"), get("A", "rslock"))
    {
        let r = ratio(q.acq(0.5), fl.acq(0.5));
        push("A acquire p50 redquorum/floor", r, "<= 1.1", Some(r <= 1.1));
        let r = ratio(q.acq(0.99), fl.acq(0.99));
        push("A acquire p99 redquorum/floor", r, "<= 1.3", Some(r <= 1.3));
        let r = ratio(q.cps(), p.cps());
        push("A cycles/s redquorum/rslock", r, ">= 1.0", Some(r >= 1.0));
        push(
            "A cpu/cycle redquorum/floor",
            ratio(q.cpu(), fl.cpu()),
            INFO,
            None,
        );
        push(
            "A cpu/cycle redquorum/rslock",
            ratio(q.cpu(), p.cpu()),
            INFO,
            None,
        );
        push(
            "A server cpu/cycle redquorum/rslock",
            ratio(q.server_cpu(), p.server_cpu()),
            INFO,
            None,
        );
    }
    if let (Some(q), Some(fl), Some(p)) =
        (get("B", "redquorum"), get("B", "floor"), get("B", "rslock"))
    {
        let r = ratio(q.cps(), fl.cps());
        push("B cycles/s redquorum/floor", r, ">= 0.9", Some(r >= 0.9));
        let r = ratio(q.cps(), p.cps());
        push("B cycles/s redquorum/rslock", r, ">= 1.2", Some(r >= 1.2));
        push(
            "B cpu/cycle redquorum/floor",
            ratio(q.cpu(), fl.cpu()),
            INFO,
            None,
        );
        push(
            "B cpu/cycle redquorum/rslock",
            ratio(q.cpu(), p.cpu()),
            INFO,
            None,
        );
        push(
            "B server cpu/cycle redquorum/rslock",
            ratio(q.server_cpu(), p.server_cpu()),
            INFO,
            None,
        );
    }
    // Issue 36: a token asked for on every grant costs at most one round
    // trip more (one round trip = the floor's acquire p50: one script on
    // all N nodes).
    if let (Some(t), Some(q), Some(fl)) =
        (get("A", TOKEN), get("A", "redquorum"), get("A", "floor"))
    {
        let r = (t.acq(0.5) - q.acq(0.5)) / fl.acq(0.5);
        push(
            "A acquire p50 with a token every cycle, above the default's, in floor round trips",
            r,
            "<= 1",
            Some(r <= 1.0),
        );
    }
    for workload in ["A", "B"] {
        if let Some((t, q)) = get(workload, TOKEN).zip(get(workload, "redquorum")) {
            push(
                &format!("{workload} cycles/s {TOKEN}/redquorum"),
                ratio(t.cps(), q.cps()),
                INFO,
                None,
            );
        }
        // What proposing in every acquire cost the default, which no
        // longer does until a token is asked for.
        if let Some((q, e)) = get(workload, "redquorum").zip(get(workload, EAGER)) {
            push(
                &format!("{workload} cycles/s redquorum/{EAGER}"),
                ratio(q.cps(), e.cps()),
                INFO,
                None,
            );
            push(
                &format!("{workload} server cpu/cycle redquorum/{EAGER}"),
                ratio(q.server_cpu(), e.server_cpu()),
                INFO,
                None,
            );
        }
    }
    for workload in ["A", "B"] {
        if let (Some(q), Some(p)) = (get(workload, NO_FENCE), get(workload, "rslock")) {
            push(
                &format!("{workload} cycles/s {NO_FENCE}/rslock"),
                ratio(q.cps(), p.cps()),
                INFO,
                None,
            );
        }
    }
    if let (Some(q), Some(p)) = (get("C", "redquorum"), get("C", "rslock")) {
        let r = ratio(q.cps(), p.cps());
        push(
            "C critical sections/s redquorum/rslock",
            r,
            ">= 1.0",
            Some(r >= 1.0),
        );
        push(
            "C redquorum requests per critical section",
            q.req(),
            "<= 11",
            Some(q.req() <= 11.0),
        );
        push(
            "C rslock requests per critical section",
            p.req(),
            INFO,
            None,
        );
        push(
            "C hand-off p50 redquorum/rslock",
            ratio(q.gap(0.5), p.gap(0.5)),
            INFO,
            None,
        );
    }
    if let (Some(q), Some(p), Some(a)) = (
        get("C2", "redquorum"),
        get("C2", "rslock"),
        get("A", "floor"),
    ) {
        let r = ratio(q.gap(0.5), p.gap(0.5));
        push(
            "C2 hand-off p50 redquorum/rslock",
            r,
            "<= 0.1",
            Some(r <= 0.1),
        );
        // One round trip = the floor's acquire p50 (one script on all N nodes).
        let r = ratio(q.gap(0.5), a.acq(0.5));
        push(
            "C2 hand-off p50 in floor round trips",
            r,
            "<= 2",
            Some(r <= 2.0),
        );
    }
    // Issue 36: no client below half the mean under contention (16 workers
    // on one name), for every kind; rslock's for comparison.
    let kinds = LockKind::BESIDE_PLAIN.map(LockKind::name);
    for lib in ["redquorum", NO_FENCE, "rslock"].into_iter().chain(kinds) {
        if let Some(c) = get("C", lib) {
            let share = c.fair(Fairness::min_share);
            let name = format!("C least-served client / mean {lib}");
            if lib == "rslock" {
                push(&name, share, INFO, None);
            } else {
                push(&name, share, ">= 0.5", Some(share >= 0.5));
            }
        }
    }
    // Issue 14: every kind under contention is woken by notification, at no
    // more than the plain lock's requests + 1 and hand-off p50 within 2x.
    for lib in LockKind::BESIDE_PLAIN.map(LockKind::name) {
        if let (Some(k), Some(q)) = (get("A", lib), get("A", "redquorum")) {
            let name = format!("A acquire p50 {lib}/redquorum");
            push(&name, ratio(k.acq(0.5), q.acq(0.5)), INFO, None);
        }
        for workload in ["C", "C2"] {
            if let (Some(k), Some(q)) = (get(workload, lib), get(workload, "redquorum")) {
                let name = format!("{workload} requests per critical section {lib} - redquorum");
                let extra = k.req() - q.req();
                push(&name, extra, "<= 1", Some(extra <= 1.0));
                let name = format!("{workload} hand-off p50 {lib}/redquorum");
                let r = ratio(k.gap(0.5), q.gap(0.5));
                push(&name, r, "<= 2", Some(r <= 2.0));
            }
        }
    }
    // Issue 22: a minority down keeps the speed of all up.
    for lib in ["redquorum", "rslock"] {
        for (label, _, _) in DOWN_CASES {
            for key in ["A", "B"] {
                if let (Some(up), Some(down)) = (get(key, lib), get(&format!("{key} {label}"), lib))
                {
                    let r = ratio(down.cps(), up.cps());
                    let name = format!("{key} cycles/s {label}/all-up {lib}");
                    if lib == "redquorum" && label != "2-dead" {
                        push(&name, r, ">= 0.8", Some(r >= 0.8));
                    } else {
                        push(&name, r, INFO, None);
                    }
                }
            }
            if let (Some(up), Some(down)) = (get("C2", lib), get(&format!("C2 {label}"), lib)) {
                let r = ratio(down.gap(0.5), up.gap(0.5));
                let name = format!("C2 hand-off p50 {label}/all-up {lib}");
                if lib == "redquorum" {
                    push(&name, r, "<= 2.0", Some(r <= 2.0));
                } else {
                    push(&name, r, INFO, None);
                }
            }
        }
        for key in ["A", "B"] {
            let one = get(&format!("{key} 1-dead"), lib);
            if let (Some(one), Some(two), true) =
                (one, get(&format!("{key} 2-dead"), lib), lib == "redquorum")
            {
                let r = ratio(two.cps(), one.cps());
                let name = format!("{key} cycles/s 2-dead/1-dead {lib}");
                push(&name, r, ">= 0.9", Some(r >= 0.9));
            }
        }
    }
    let growth = |lib: &'static str| match (get("D3", lib), get("D9", lib)) {
        (Some(d3), Some(d9)) => Some(ratio(d9.acq(0.5), d3.acq(0.5))),
        _ => None,
    };
    for lib in ["floor", "redquorum", "rslock"] {
        if let Some(r) = growth(lib) {
            let name = format!("D acquire p50 N=9/N=3 {lib}");
            if lib == "redquorum" {
                push(&name, r, "<= 1.3", Some(r <= 1.3));
            } else {
                push(&name, r, INFO, None);
            }
        }
    }
    // Issue 14: the growth no worse than rslock's in the same run.
    if let (Some(ours), Some(theirs)) = (growth("redquorum"), growth("rslock")) {
        let r = ours / theirs;
        push(
            "D acquire p50 growth N=3 to 9 redquorum/rslock",
            r,
            "<= 1.0",
            Some(r <= 1.0),
        );
    }
    out
}

fn print_json(results: &Results, plan: Plan) {
    let cells: Vec<serde_json::Value> = results
        .iter()
        .map(|((key, lib), c)| {
            serde_json::json!({
                "workload": key,
                "library": lib,
                "cycles_per_sec": round3(c.cps()),
                "acquire_p50_us": round3(c.acq(0.5)),
                "acquire_p99_us": round3(c.acq(0.99)),
                "release_p50_us": round3(c.rel(0.5)),
                "release_p99_us": round3(c.rel(0.99)),
                "client_cpu_us_per_cycle": round3(c.cpu()),
                "server_cpu_us_per_cycle": round3(c.server_cpu()),
                "requests_per_cycle": round3(c.req()),
                "handoff_p50_us": round3(c.gap(0.5)),
                "handoff_p99_us": round3(c.gap(0.99)),
                "client_min_cycles": round3(c.fair(|x| x.min as f64)),
                "client_max_cycles": round3(c.fair(|x| x.max as f64)),
                "client_mean_cycles": round3(c.fair(|x| x.mean)),
                "client_min_share": round3(c.fair(Fairness::min_share)),
                "errors": c.errors(),
            })
        })
        .collect();
    let checks: Vec<serde_json::Value> = checks(results)
        .into_iter()
        .map(|(name, value, target, met)| {
            serde_json::json!({ "check": name, "value": round3(value), "target": target, "met": met })
        })
        .collect();
    let report = serde_json::json!({ "repeats": plan.repeats, "results": cells, "checks": checks });
    println!("{report}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let plan = Plan::from_args(&args);
    let json = args.iter().any(|a| a == "--json");
    let bench = args.iter().any(|a| a == "--bench");
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|list| list.split(',').map(str::to_owned).collect());
    let _ = ONLY.set(only);
    let libs = args
        .iter()
        .position(|a| a == "--libs")
        .and_then(|i| args.get(i + 1))
        .map(|list| list.split(',').map(str::to_owned).collect());
    let _ = LIBS.set(libs);
    // Before any Redlock is built.
    let _ = OWN_CALLS.set(OwnCalls::install());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    // REDQUORUM_NODES (at least 9 URLs) measures on nodes started elsewhere,
    // e.g. to keep them out of `strace -f` / `perf` of this process.
    let cluster = Cluster::from_env_or_start(SIZES[SIZES.len() - 1])
        .expect("start 9 local redis-server nodes");
    let urls = cluster.urls();
    assert!(
        urls.len() >= SIZES[SIZES.len() - 1],
        "REDQUORUM_NODES needs at least 9 nodes"
    );
    if !json {
        eprintln!(
            "side_by_side: {} repeats on {} local nodes (A, B, C, C2 on {N}); floor, redquorum, rslock",
            plan.repeats,
            urls.len()
        );
    }
    let mut results = Results::new();
    runtime.block_on(async {
        for round in 0..plan.repeats {
            if !json {
                eprintln!("repeat {}/{}", round + 1, plan.repeats);
            }
            repeat(&mut results, &urls, plan, round).await;
            down_cases(&mut results, &cluster, plan).await;
        }
    });
    if json {
        print_json(&results, plan);
    } else {
        print_table(&results, plan);
    }
    let errors: u64 = results.values().map(Cell::errors).sum();
    if errors > 0 {
        eprintln!("side_by_side: {errors} failed operations (see the errors column)");
        for ((key, lib), cell) in &results {
            if let Some(e) = cell.samples.iter().find_map(|s| s.first_error.as_ref()) {
                eprintln!("  {key} {lib}: {e}");
            }
        }
        // The smoke pass (under `cargo test`) proves every workload runs:
        // a failed operation there is a broken workload, not load.
        assert!(bench, "the smoke pass had {errors} failed operations");
    }
}
