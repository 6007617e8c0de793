//! `redquorum demo`: a flash sale on real nodes, with and without locks.
//!
//! Thousands of buyers rush for a few coupons. The stock lives in a separate
//! Redis (the protected resource), split into segments. Each order takes two
//! quorum locks: one per user (one order per user) and one on any free stock
//! segment (lock-any-of-K), under which the stock is read, "paid for" and
//! written back: a read-modify-write that oversells without the lock. Midway
//! one lock master is killed, and restarted once the lock TTL has passed.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fred::clients::Client;
use fred::interfaces::{ClientLike, KeysInterface};
use redquorum::{Error, Lock, NodeId, NodeOutcome, Redlock};
use redquorum_harness::Cluster;

use crate::exit;
use crate::nodes_arg::NodesArg;
use crate::verbosity::Verbosity;

/// Options of `redquorum demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// How many local nodes to start when no --nodes are given.
    #[arg(short = 'n', long, default_value_t = 5)]
    node_count: usize,
    /// Buyer tasks; a quarter of them are a second browser tab of another buyer's user.
    #[arg(long, default_value_t = 2_000)]
    buyers: usize,
    /// Coupons on sale.
    #[arg(long, default_value_t = 100)]
    coupons: i64,
    /// Stock segments, each behind its own lock (lock-any-of-K).
    #[arg(long, default_value_t = 10)]
    segments: usize,
    /// Run the same sale without any lock, to see what the locks prevent.
    #[arg(long)]
    no_lock: bool,
}

/// Lock lease: long enough for a checkout, short enough that a crashed
/// master can be restarted (empty) soon after without breaking a lease.
const TTL: Duration = Duration::from_secs(2);
/// Buyers arrive spread over this window after the sale opens.
const ARRIVALS: Duration = Duration::from_millis(1_500);
/// Validity a lock must still have before the order is written.
const WRITE_MARGIN: Duration = Duration::from_millis(300);
/// Buyers checking out at once (the rest wait their turn).
const COUNTERS: usize = 64;
/// Bound on segment passes per checkout, so every buyer ends.
const SEGMENT_PASSES: usize = 30;

pub(crate) async fn run(nodes: &NodesArg, args: DemoArgs, verbosity: Verbosity) -> ExitCode {
    if args.buyers == 0 || args.segments == 0 || args.coupons < 1 {
        eprintln!("redquorum demo: --buyers, --segments and --coupons must be at least 1");
        return exit::USAGE.into();
    }
    let nodes = match nodes.given_or_local(args.node_count) {
        Ok(nodes) => nodes,
        Err(e) => {
            eprintln!("redquorum demo: {e}");
            return exit::UNAVAILABLE.into();
        }
    };
    let store = match Store::start().await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("redquorum demo: cannot start the stock store: {e}");
            return exit::UNAVAILABLE.into();
        }
    };
    let urls = nodes.urls();
    let redlock = match Redlock::builder()
        .nodes(&urls)
        .ttl(TTL)
        .node_timeout(Duration::from_millis(500))
        .build()
    {
        Ok(redlock) => redlock,
        Err(e) => {
            eprintln!("redquorum demo: {e}");
            return exit::USAGE.into();
        }
    };
    let sale = Arc::new(Sale::new(&args, redlock));
    println!(
        "flash sale: {} buyers ({} users), {} coupons in {} segments, {}",
        args.buyers,
        sale.users,
        args.coupons,
        args.segments,
        if args.no_lock {
            "NO LOCKS".to_owned()
        } else {
            format!(
                "locks on {} nodes (quorum {})",
                urls.len(),
                sale.redlock.quorum()
            )
        }
    );
    if let Err(e) = store.stock_up(&sale).await {
        eprintln!("redquorum demo: cannot write the stock: {e}");
        return exit::UNAVAILABLE.into();
    }
    let started = Instant::now();
    let buyers: Vec<_> = (0..args.buyers)
        .map(|buyer| tokio::spawn(buy(Arc::clone(&sale), store.client.clone(), buyer)))
        .collect();
    let chaos = chaos(&sale, nodes.local());
    let progress = progress(&sale, verbosity);
    let (_, chaos_log) = tokio::join!(
        async {
            futures::future::join_all(buyers).await;
            sale.finished.store(true, Ordering::Relaxed);
        },
        chaos
    );
    let _ = progress.await;
    let elapsed = started.elapsed();
    match report(&sale, &store, nodes.local(), &chaos_log, elapsed).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => exit::SOFTWARE.into(),
        Err(e) => {
            eprintln!("redquorum demo: cannot read the results: {e}");
            exit::SOFTWARE.into()
        }
    }
}

/// Everything the buyers share.
struct Sale {
    redlock: Redlock,
    locked: bool,
    buyers: usize,
    users: usize,
    coupons: i64,
    run: String,
    /// Segments a buyer saw empty (under its lock, so for good).
    empty: Vec<AtomicBool>,
    sold: AtomicUsize,
    done: AtomicUsize,
    finished: AtomicBool,
    /// The shop's checkout counters: how many buyers may check out at once
    /// (the "waiting room" of real flash sales), so a crowd cannot turn lock
    /// contention into an overload of the lock masters.
    counters: tokio::sync::Semaphore,
    /// When the sale opened: arrivals count from here, not from each task's first poll.
    opened: tokio::time::Instant,
    stats: Stats,
}

#[derive(Default)]
struct Stats {
    acquired: AtomicUsize,
    contended: AtomicUsize,
    failed: AtomicUsize,
    ordered: AtomicUsize,
    sold_out: AtomicUsize,
    already: AtomicUsize,
    gave_up: AtomicUsize,
    /// Per node: answers that were errors or timeouts, from the lock errors' outcomes.
    node_failures: Mutex<BTreeMap<NodeId, usize>>,
}

impl Sale {
    fn new(args: &DemoArgs, redlock: Redlock) -> Self {
        Self {
            redlock,
            locked: !args.no_lock,
            buyers: args.buyers,
            users: (args.buyers - args.buyers / 4).max(1),
            coupons: args.coupons,
            run: format!("{:08x}", rand::random::<u32>()),
            empty: (0..args.segments).map(|_| AtomicBool::new(false)).collect(),
            sold: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            finished: AtomicBool::new(false),
            opened: tokio::time::Instant::now(),
            counters: tokio::sync::Semaphore::new(COUNTERS),
            stats: Stats::default(),
        }
    }

    fn segment_lock(&self, segment: usize) -> String {
        format!("demo:{}:segment:{segment}", self.run)
    }

    fn user_lock(&self, user: usize) -> String {
        format!("demo:{}:user:{user}", self.run)
    }

    /// Records a lock error: contention, or a failure with its per-node detail.
    fn lock_error(&self, error: &Error) {
        if matches!(error, Error::Contended { .. }) {
            self.stats.contended.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.stats.failed.fetch_add(1, Ordering::Relaxed);
        if let Some(outcomes) = error.outcomes() {
            let mut failures = self.stats.node_failures.lock().expect("not poisoned");
            for (node, outcome) in outcomes.iter() {
                if matches!(
                    outcome,
                    NodeOutcome::Failed(_) | NodeOutcome::TimedOut | NodeOutcome::Down(_)
                ) {
                    *failures.entry(node.clone()).or_default() += 1;
                }
            }
        }
    }
}

/// The protected resource: stock and orders in their own Redis, outside the lock quorum.
struct Store {
    _node: Cluster,
    client: Client,
}

impl Store {
    async fn start() -> Result<Self, Box<dyn std::error::Error>> {
        let node = Cluster::start(1)?;
        let config = fred::prelude::Config::from_url(&node.url(0))?;
        let client = Client::new(config, None, None, None);
        client.init().await?;
        Ok(Self {
            _node: node,
            client,
        })
    }

    /// Splits the coupons over the segments (the first ones get the remainder).
    async fn stock_up(&self, sale: &Sale) -> Result<(), fred::error::Error> {
        let segments = sale.empty.len() as i64;
        for segment in 0..sale.empty.len() {
            let extra = i64::from((segment as i64) < sale.coupons % segments);
            let stock = sale.coupons / segments + extra;
            let _: () = self
                .client
                .set(stock_key(segment), stock, None, None, false)
                .await?;
        }
        Ok(())
    }
}

fn stock_key(segment: usize) -> String {
    format!("stock:{segment}")
}

fn orders_key(user: usize) -> String {
    format!("orders:{user}")
}

/// How one buyer's visit ended.
enum Visit {
    Ordered,
    SoldOut,
    AlreadyOrdered,
    /// Locks contended or unavailable on every try.
    Retry,
}

/// One buyer: arrives, then tries to check out (some buyers several times).
async fn buy(sale: Arc<Sale>, store: Client, buyer: usize) {
    // A quarter of the buyers are a second tab of a user, arriving at the
    // same instant as the first: the double click that one-order-per-user must stop.
    let user = buyer % sale.users;
    let arrival = ARRIVALS.mul_f64(unit(user as u64 ^ 0x5eed));
    tokio::time::sleep_until(sale.opened + arrival).await;
    let tries = 1 + buyer % 3;
    let mut visit = Visit::Retry;
    for _ in 0..tries {
        let Ok(counter) = sale.counters.acquire().await else {
            break;
        };
        visit = match checkout(&sale, &store, user).await {
            Ok(visit) => visit,
            Err(e) => {
                warn_store_error(&e);
                Visit::Retry
            }
        };
        drop(counter); // free the counter while this buyer waits to retry
        if !matches!(visit, Visit::Retry) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20 + rand::random::<u64>() % 30)).await;
    }
    let counter = match visit {
        Visit::Ordered => &sale.stats.ordered,
        Visit::SoldOut => &sale.stats.sold_out,
        Visit::AlreadyOrdered => &sale.stats.already,
        Visit::Retry => &sale.stats.gave_up,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    sale.done.fetch_add(1, Ordering::Relaxed);
}

/// Store errors are rare (a local Redis); show the first few only.
fn warn_store_error(e: &fred::error::Error) {
    static SHOWN: AtomicUsize = AtomicUsize::new(0);
    if SHOWN.fetch_add(1, Ordering::Relaxed) < 3 {
        eprintln!("store error: {e}");
    }
}

/// A stable pseudo-random number in [0, 1) for `seed` (arrival times).
fn unit(seed: u64) -> f64 {
    let mixed = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    (mixed >> 11) as f64 / (1u64 << 53) as f64
}

/// One checkout: the user lock, then a stock segment lock, then the order.
async fn checkout(sale: &Sale, store: &Client, user: usize) -> Result<Visit, fred::error::Error> {
    if sale.empty.iter().all(|e| e.load(Ordering::Relaxed)) {
        return Ok(Visit::SoldOut);
    }
    let user_lock = if sale.locked {
        match sale.redlock.try_lock(&sale.user_lock(user)).await {
            Ok(lock) => {
                sale.stats.acquired.fetch_add(1, Ordering::Relaxed);
                Some(lock)
            }
            Err(e) => {
                sale.lock_error(&e);
                return Ok(Visit::Retry);
            }
        }
    } else {
        None
    };
    let visit = order(sale, store, user, user_lock.as_ref()).await;
    // Dropping a lock releases it in the background: the live nodes free it at
    // once, and the buyer does not wait out a dead node's timeout.
    drop(user_lock);
    visit
}

/// Under the user lock: one order per user, stock from any free segment.
async fn order(
    sale: &Sale,
    store: &Client,
    user: usize,
    user_lock: Option<&Lock>,
) -> Result<Visit, fred::error::Error> {
    let orders: Option<i64> = store.get(orders_key(user)).await?;
    if orders.unwrap_or(0) > 0 {
        return Ok(Visit::AlreadyOrdered);
    }
    for pass in 0..SEGMENT_PASSES {
        let open: Vec<usize> = (0..sale.empty.len())
            .filter(|&s| !sale.empty[s].load(Ordering::Relaxed))
            .collect();
        if open.is_empty() {
            return Ok(Visit::SoldOut);
        }
        let (segment, lock) = if sale.locked {
            let names: Vec<String> = open.iter().map(|&s| sale.segment_lock(s)).collect();
            match sale.redlock.try_lock_any(&names).await {
                Ok((index, lock)) => {
                    sale.stats.acquired.fetch_add(1, Ordering::Relaxed);
                    (open[index], Some(lock))
                }
                Err(e) => {
                    sale.lock_error(&e);
                    // Exponential backoff with full jitter: a crowd retrying in
                    // step would only collide again.
                    let cap = 10u64 << pass.min(4);
                    tokio::time::sleep(Duration::from_millis(5 + rand::random::<u64>() % cap))
                        .await;
                    continue;
                }
            }
        } else {
            (open[rand::random::<usize>() % open.len()], None)
        };
        let stock: i64 = store
            .get::<Option<i64>, _>(stock_key(segment))
            .await?
            .unwrap_or(0);
        if stock <= 0 {
            sale.empty[segment].store(true, Ordering::Relaxed);
            drop(lock);
            continue;
        }
        // "Payment": the read-modify-write window a lock must cover.
        tokio::time::sleep(Duration::from_millis(2 + rand::random::<u64>() % 6)).await;
        if !usable(user_lock) || !usable(lock.as_ref()) {
            // Near or past a lease's end another buyer may get that lock: do not write.
            sale.stats.failed.fetch_add(1, Ordering::Relaxed);
            return Ok(Visit::Retry);
        }
        let _: () = store
            .set(stock_key(segment), stock - 1, None, None, false)
            .await?;
        let _: i64 = store.incr(orders_key(user)).await?;
        sale.sold.fetch_add(1, Ordering::Relaxed);
        drop(lock);
        return Ok(Visit::Ordered);
    }
    Ok(Visit::Retry)
}

/// True without a lock, or while the lock has more than `WRITE_MARGIN` of validity left
/// (time for the two store writes; a fencing token would make this airtight).
fn usable(lock: Option<&Lock>) -> bool {
    lock.is_none_or(|lock| lock.validity() > WRITE_MARGIN)
}

/// What happened to the killed master, for the summary.
#[derive(Debug, Default)]
struct ChaosLog {
    killed: Option<(usize, usize)>,
    restarted_after: Option<Duration>,
    error: Option<String>,
}

/// Kills one master once 30% of the coupons are sold, restarts it after the TTL.
///
/// The restart waits for the TTL because the node comes back empty (no
/// persistence): any lock it had granted has expired by then, so forgetting
/// it cannot let two holders in (docs/safety.md).
async fn chaos(sale: &Sale, cluster: Option<&Cluster>) -> ChaosLog {
    let mut log = ChaosLog::default();
    let Some(cluster) = cluster else {
        return log;
    };
    let victim = cluster.len() - 1;
    let trigger = (sale.coupons as usize * 3 / 10).max(1);
    while sale.sold.load(Ordering::Relaxed) < trigger {
        if sale.finished.load(Ordering::Relaxed) {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The harness waits for the process; do that off the async workers.
    if let Err(e) = tokio::task::block_in_place(|| cluster.kill(victim)) {
        log.error = Some(format!("kill failed: {e}"));
        return log;
    }
    let killed_at = Instant::now();
    log.killed = Some((victim, sale.sold.load(Ordering::Relaxed)));
    tokio::time::sleep(TTL + Duration::from_millis(100)).await;
    match tokio::task::block_in_place(|| cluster.restart(victim)) {
        Ok(()) => log.restarted_after = Some(killed_at.elapsed()),
        Err(e) => log.error = Some(format!("restart failed: {e}")),
    }
    log
}

/// The buyers-done bar (stderr, hidden off a terminal or with `-q`),
/// updated every 100 ms until every buyer is done.
fn progress(sale: &Arc<Sale>, verbosity: Verbosity) -> tokio::task::JoinHandle<()> {
    let sale = Arc::clone(sale);
    let bar = crate::progress::counter(verbosity, sale.buyers as u64, "buyers");
    tokio::spawn(async move {
        loop {
            let finished = sale.finished.load(Ordering::Relaxed);
            bar.set_position(sale.done.load(Ordering::Relaxed) as u64);
            bar.set_message(format!("{} sold", sale.sold.load(Ordering::Relaxed)));
            if finished {
                bar.finish_and_clear();
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}

/// Prints the summary from the store's own records; returns whether every invariant held.
async fn report(
    sale: &Sale,
    store: &Store,
    cluster: Option<&Cluster>,
    chaos: &ChaosLog,
    elapsed: Duration,
) -> Result<bool, fred::error::Error> {
    let mut remaining = 0;
    for segment in 0..sale.empty.len() {
        remaining += store
            .client
            .get::<Option<i64>, _>(stock_key(segment))
            .await?
            .unwrap_or(0);
    }
    let mut orders = 0;
    let mut doubled = 0;
    for user in 0..sale.users {
        let count = store
            .client
            .get::<Option<i64>, _>(orders_key(user))
            .await?
            .unwrap_or(0);
        orders += count;
        doubled += usize::from(count > 1);
    }
    let oversold = (orders - sale.coupons).max(0);
    let lost_updates = orders + remaining - sale.coupons;
    let stats = &sale.stats;
    println!("\nsummary ({:.1} s):", elapsed.as_secs_f64());
    println!("  coupons sold: {orders} of {}", sale.coupons);
    println!("  oversold: {oversold}");
    println!("  users with more than one order: {doubled}");
    println!("  stock left: {remaining} (sold + left - coupons = {lost_updates})");
    println!(
        "  buyers: {} ordered, {} sold out, {} already had an order, {} gave up",
        stats.ordered.load(Ordering::Relaxed),
        stats.sold_out.load(Ordering::Relaxed),
        stats.already.load(Ordering::Relaxed),
        stats.gave_up.load(Ordering::Relaxed)
    );
    if sale.locked {
        println!(
            "  lock acquisitions: {}, contentions: {}, failures: {}",
            stats.acquired.load(Ordering::Relaxed),
            stats.contended.load(Ordering::Relaxed),
            stats.failed.load(Ordering::Relaxed)
        );
    }
    match (chaos.killed, chaos.restarted_after) {
        (Some((victim, sold)), Some(after)) => println!(
            "  node {} killed (kill -9) after {sold} coupons sold; restarted {:.1} s later",
            victim + 1,
            after.as_secs_f64()
        ),
        (Some((victim, sold)), None) => {
            println!("  node {} killed after {sold} coupons sold", victim + 1)
        }
        _ if cluster.is_none() => println!("  (nodes given by --nodes: none was killed)"),
        _ => println!("  no node was killed: the sale ended first"),
    }
    if let Some(error) = &chaos.error {
        println!("  chaos: {error}");
    }
    let failures = stats.node_failures.lock().expect("not poisoned");
    println!("  per node:");
    for (index, node) in sale.redlock.nodes().enumerate() {
        let state = match cluster {
            Some(cluster) if !cluster.is_running(index) => "down".to_owned(),
            Some(cluster) => {
                let keys = cluster
                    .command(index, &["DBSIZE"])
                    .ok()
                    .and_then(|r| r.as_int())
                    .map_or("?".to_owned(), |n| n.to_string());
                format!("up, {keys} keys")
            }
            None => "given".to_owned(),
        };
        let chaos_note = match chaos.killed {
            Some((victim, _)) if victim == index => " (killed mid-run, restarted)",
            _ => "",
        };
        println!(
            "    {}. {node}: {state}, {} failed answers in lock errors{chaos_note}",
            index + 1,
            failures.get(node).copied().unwrap_or(0)
        );
    }
    let ok = oversold == 0 && doubled == 0 && lost_updates == 0;
    if ok {
        println!("invariants hold: 0 oversold, 0 double orders");
    } else if sale.locked {
        println!("INVARIANT BROKEN with locks: this is a bug");
    } else {
        println!("invariants broken, as expected without locks: run without --no-lock to compare");
    }
    Ok(ok)
}
