//! The demo's summary, from the store's own records: what was sold, the
//! invariants, the buyers, the locks, the killed master and each node.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::nodes_arg::Nodes;
use fred::interfaces::KeysInterface;

use super::chaos::ChaosLog;
use super::sale::{Sale, Store, orders_key, stock_key};

/// Prints the summary from the store's own records; returns whether every invariant held.
pub(super) async fn report(
    sale: &Sale,
    store: &Store,
    nodes: &Nodes,
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
    let which = |victim: usize| nodes.process_of(victim).map_or("", |(_, _, label)| label);
    match (chaos.killed, chaos.restarted_after) {
        (Some((victim, sold)), Some(after)) => println!(
            "  node {}{} killed (kill -9) after {sold} coupons sold; restarted {:.1} s later",
            victim + 1,
            which(victim),
            after.as_secs_f64()
        ),
        (Some((victim, sold)), None) => println!(
            "  node {}{} killed after {sold} coupons sold",
            victim + 1,
            which(victim)
        ),
        _ if matches!(nodes, Nodes::Given(_)) => {
            println!("  (nodes given by --nodes: none was killed)")
        }
        _ => println!("  no node was killed: the sale ended first"),
    }
    if let Some(error) = &chaos.error {
        println!("  chaos: {error}");
    }
    let failures = stats.node_failures.lock().expect("not poisoned");
    println!("  per node:");
    for (index, node) in sale.redlock.nodes().enumerate() {
        let state = nodes.state(index).unwrap_or_else(|| "given".to_owned());
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
