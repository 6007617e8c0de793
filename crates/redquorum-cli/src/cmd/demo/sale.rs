//! What the demo's buyers share: the sale (its lock, its counters, its
//! statistics) and the stock store, the protected resource in a Redis of
//! its own outside the lock quorum.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use fred::clients::Client;
use fred::interfaces::{ClientLike, KeysInterface};
use redquorum::{Error, NodeId, NodeOutcome, Redlock};
use redquorum_harness::Cluster;

use super::{COUNTERS, DemoArgs};

/// Everything the buyers share.
pub(super) struct Sale {
    pub(super) redlock: Redlock,
    pub(super) locked: bool,
    pub(super) buyers: usize,
    pub(super) users: usize,
    pub(super) coupons: i64,
    pub(super) run: String,
    /// Segments a buyer saw empty (under its lock, so for good).
    pub(super) empty: Vec<AtomicBool>,
    pub(super) sold: AtomicUsize,
    pub(super) done: AtomicUsize,
    pub(super) finished: AtomicBool,
    /// The shop's checkout counters: how many buyers may check out at once
    /// (the "waiting room" of real flash sales), so a crowd cannot turn lock
    /// contention into an overload of the lock masters.
    pub(super) counters: tokio::sync::Semaphore,
    /// When the sale opened: arrivals count from here, not from each task's first poll.
    pub(super) opened: tokio::time::Instant,
    pub(super) stats: Stats,
}

#[derive(Default)]
pub(super) struct Stats {
    pub(super) acquired: AtomicUsize,
    pub(super) contended: AtomicUsize,
    pub(super) failed: AtomicUsize,
    pub(super) ordered: AtomicUsize,
    pub(super) sold_out: AtomicUsize,
    pub(super) already: AtomicUsize,
    pub(super) gave_up: AtomicUsize,
    /// Per node: answers that were errors or timeouts, from the lock errors' outcomes.
    pub(super) node_failures: Mutex<BTreeMap<NodeId, usize>>,
}

impl Sale {
    pub(super) fn new(args: &DemoArgs, redlock: Redlock) -> Self {
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

    pub(super) fn segment_lock(&self, segment: usize) -> String {
        format!("demo:{}:segment:{segment}", self.run)
    }

    pub(super) fn user_lock(&self, user: usize) -> String {
        format!("demo:{}:user:{user}", self.run)
    }

    /// Records a lock error: contention, or a failure with its per-node detail.
    pub(super) fn lock_error(&self, error: &Error) {
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
pub(super) struct Store {
    _node: Cluster,
    pub(super) client: Client,
}

impl Store {
    pub(super) async fn start() -> Result<Self, Box<dyn std::error::Error>> {
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
    pub(super) async fn stock_up(&self, sale: &Sale) -> Result<(), fred::error::Error> {
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

pub(super) fn stock_key(segment: usize) -> String {
    format!("stock:{segment}")
}

pub(super) fn orders_key(user: usize) -> String {
    format!("orders:{user}")
}
