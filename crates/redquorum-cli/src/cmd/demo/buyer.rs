//! One buyer of the demo: arrives, takes the user lock and a stock
//! segment's lock (lock-any-of-K), and orders under them, or gives up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fred::clients::Client;
use fred::interfaces::KeysInterface;
use redquorum::Lock;

use super::sale::{Sale, orders_key, stock_key};
use super::{ARRIVALS, SEGMENT_PASSES, WRITE_MARGIN};

/// How one buyer's visit ended.
enum Visit {
    Ordered,
    SoldOut,
    AlreadyOrdered,
    /// Locks contended or unavailable on every try.
    Retry,
}

/// One buyer: arrives, then tries to check out (some buyers several times).
pub(super) async fn buy(sale: Arc<Sale>, store: Client, buyer: usize) {
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
        stderr_line!("store error: {e}");
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
