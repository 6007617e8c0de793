//! Leader election: candidates compete for one lock, and the leader's
//! fencing token is its epoch. Every write the leader makes carries the
//! epoch; the store refuses a write from an older epoch, so a deposed
//! leader that has not noticed yet (paused, partitioned) cannot undo the
//! work of its successor.
//!
//! ```sh
//! eval "$(redquorum nodes up)"   # or any REDQUORUM_NODES
//! cargo run -p redquorum --example leader_election
//! ```
//!
//! Three candidates run in this process for `TERMS` terms (default 3),
//! each term about a second; in production each candidate is its own
//! process or host running the same loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redquorum::{FenceToken, Redlock};
use tokio::sync::Mutex;

/// What the leader writes to: it keeps the highest epoch it has seen and
/// refuses lower ones (a database row with an `epoch` column does the same
/// with `UPDATE ... WHERE epoch <= $epoch`).
#[derive(Default)]
struct Store {
    epoch: Mutex<Option<FenceToken>>,
}

impl Store {
    async fn write(&self, epoch: FenceToken, what: &str) -> Result<(), String> {
        let mut highest = self.epoch.lock().await;
        if highest.is_some_and(|h| epoch < h) {
            return Err(format!("refused {what:?} from stale epoch {epoch}"));
        }
        *highest = Some(epoch);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let terms: u64 = std::env::var("TERMS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(3);
    let redlock = Redlock::from_env()?;
    let store = Arc::new(Store::default());
    let served = Arc::new(AtomicU64::new(0));
    let candidates: Vec<_> = (1..=3)
        .map(|id| {
            let (redlock, store, served) =
                (redlock.clone(), Arc::clone(&store), Arc::clone(&served));
            tokio::spawn(async move { campaign(id, &redlock, &store, &served, terms).await })
        })
        .collect();
    for candidate in candidates {
        candidate.await??;
    }
    redlock.shutdown().await;
    Ok(())
}

/// One candidate: wait to become leader, lead one term, step down; until
/// `terms` terms have been served in all.
async fn campaign(
    id: u32,
    redlock: &Redlock,
    store: &Store,
    served: &AtomicU64,
    terms: u64,
) -> Result<(), redquorum::Error> {
    let mut last_epoch = None;
    while served.load(Ordering::SeqCst) < terms {
        // `lock` waits (up to its `wait`, then tries again here) while
        // another candidate leads; the release wakes the next one at once.
        let mut leadership = match redlock.lock("leader:reports").await {
            Ok(lock) => lock,
            Err(redquorum::Error::WaitTimeout { .. }) => continue,
            Err(error) => return Err(error),
        };
        if served.load(Ordering::SeqCst) >= terms {
            leadership.release().await?;
            break;
        }
        leadership.auto_extend();
        let epoch = leadership.fence().await?;
        assert!(last_epoch < Some(epoch), "epochs only grow");
        last_epoch = Some(epoch);
        println!("candidate {id} leads, epoch {epoch}");
        let lost = leadership.lost();
        let term = async {
            for tick in 0..4 {
                if let Err(refused) = store.write(epoch, &format!("tick {tick}")).await {
                    println!("candidate {id}: {refused}");
                    return;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        };
        tokio::select! {
            reason = lost => println!("candidate {id} lost leadership: {reason}"),
            () = term => {
                served.fetch_add(1, Ordering::SeqCst);
                println!("candidate {id} steps down after epoch {epoch}");
                leadership.release().await?;
            }
        }
    }
    Ok(())
}
