//! `redquorum demo`: a flash sale on real nodes, with and without locks.
//!
//! Thousands of buyers rush for a few coupons. The stock lives in a separate
//! Redis (the protected resource), split into segments. Each order takes two
//! quorum locks: one per user (one order per user) and one on any free stock
//! segment (lock-any-of-K), under which the stock is read, "paid for" and
//! written back: a read-modify-write that oversells without the lock. Midway
//! one lock master is killed, and restarted once the lock TTL has passed.
//!
//! The sale and its store are in `demo/sale.rs`, a buyer in
//! `demo/buyer.rs`, the killed master in `demo/chaos.rs`, the summary in
//! `demo/report.rs`.

mod buyer;
mod chaos;
mod report;
mod sale;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use redquorum::Redlock;

use crate::exit;
use crate::nodes_arg::NodesArg;
use crate::verbosity::Verbosity;
use buyer::buy;
use chaos::chaos;
use report::report;
use sale::{Sale, Store};

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
    /// Start each local master as a Redis Cluster of this many shards
    /// (`redis-cluster://`, 1 to 16; not with --nodes): the chaos then
    /// kills one shard's primary.
    #[arg(long, value_name = "SHARDS", value_parser = crate::arg_values::shards)]
    cluster: Option<u16>,
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
        stderr_line!("redquorum demo: --buyers, --segments and --coupons must be at least 1");
        return exit::USAGE.into();
    }
    if args.cluster.is_some() && !nodes.is_empty() {
        stderr_line!(
            "redquorum demo: --cluster starts local clusters; give redis-cluster:// URLs in --nodes instead"
        );
        return exit::USAGE.into();
    }
    let nodes = match nodes.given_or_local_sharded(args.node_count, args.cluster.map(usize::from)) {
        Ok(nodes) => nodes,
        Err(e) => {
            stderr_line!("redquorum demo: {e}");
            return exit::UNAVAILABLE.into();
        }
    };
    let store = match Store::start().await {
        Ok(store) => store,
        Err(e) => {
            stderr_line!("redquorum demo: cannot start the stock store: {e}");
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
            stderr_line!("redquorum demo: {e}");
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
        stderr_line!("redquorum demo: cannot write the stock: {e}");
        return exit::UNAVAILABLE.into();
    }
    let started = Instant::now();
    let buyers: Vec<_> = (0..args.buyers)
        .map(|buyer| tokio::spawn(buy(Arc::clone(&sale), store.client.clone(), buyer)))
        .collect();
    let chaos = chaos(&sale, &nodes);
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
    match report(&sale, &store, &nodes, &chaos_log, elapsed).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => exit::SOFTWARE.into(),
        Err(e) => {
            stderr_line!("redquorum demo: cannot read the results: {e}");
            exit::SOFTWARE.into()
        }
    }
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
