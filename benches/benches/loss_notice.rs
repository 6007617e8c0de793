//! How soon a holder learns that its lock was taken away: an operator's
//! force-release (`Redlock::force_release`) against a holder whose watchdog
//! runs (`auto_extend`) with a 30 s lease, on 5 local nodes. The holder's
//! watchdog hears the force-release announced on the lock's lost channel,
//! extends at once, and the refusal fires its `lost()` signal; without the
//! announcement it would learn at its next extension, 10-20 s later.
//! Then a loss nobody announces: a majority of the nodes restarted empty
//! (no persistence). The holder's subscriber connections to them break and
//! come back, the reconnection wakes the watchdog, and its extension finds
//! the hold gone.
//!
//! ```sh
//! cargo bench -p redquorum-benches --bench loss_notice              # 200 rounds, ~30 s
//! cargo bench -p redquorum-benches --bench loss_notice -- --quick   # 30 rounds
//! ```
//!
//! Prints, per round, the time from the force-release's start to the
//! holder's `lost()` (the notice) and the force-release's own round trip
//! (the baseline, measured in the same rounds), their p50 and p99, and the
//! ratio of the medians; then, over fewer rounds (a restart takes a server
//! start), the time from the last restarted node answering again to
//! `lost()`. Under `cargo test` (no `--bench`) it makes a smoke pass of
//! three and one rounds, to prove the paths run.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use redquorum::{LostReason, Redlock};
use redquorum_harness::Cluster;

const N: usize = 5;
/// Longer than the run: only the announcement can make the holder learn early.
const TTL: Duration = Duration::from_secs(30);
/// A round whose holder has not learned within this is counted as missed.
const GIVE_UP: Duration = Duration::from_secs(5);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let benching = args.iter().any(|a| a == "--bench");
    let (rounds, restart_rounds) = match (benching, args.iter().any(|a| a == "--quick")) {
        (false, _) => (3, 1),
        (true, true) => (30, 5),
        (true, false) => (200, 20),
    };
    let nodes = Cluster::start(N).expect("start 5 redis-server nodes");
    let build = || {
        Redlock::builder()
            .nodes(nodes.urls())
            .ttl(TTL)
            .node_timeout(Duration::from_millis(200))
            .build()
            .expect("valid configuration")
    };
    let (holder, operator) = (build(), build());
    let mut notice = Histogram::<u64>::new(3).expect("histogram");
    let mut round_trip = Histogram::<u64>::new(3).expect("histogram");
    let mut missed = 0;
    for round in 0..rounds {
        let name = format!("notice-{round}");
        let mut lock = holder.lock(&name).await.expect("lock");
        lock.auto_extend();
        let channel = format!("redquorum:released:{}:lost", lock.key());
        listening(&nodes, &channel).await;
        let lost = lock.lease().lost();
        let start = Instant::now();
        operator.force_release(&name).await.expect("force-release");
        let returned = start.elapsed();
        match tokio::time::timeout(GIVE_UP, lost).await {
            Ok(LostReason::NotHeld) => {
                notice.record(micros(start.elapsed())).expect("in range");
                round_trip.record(micros(returned)).expect("in range");
            }
            Ok(other) => panic!("round {round}: lost as {other:?}"),
            Err(_) => missed += 1,
        }
        drop(lock);
    }
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "loss notice on {N} local nodes, {rounds} rounds, lease {TTL:?} (next extension 10-20 s away)"
    );
    println!(
        "  force-release to lost(): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; missed (> {GIVE_UP:?}): {missed}",
        ms(&notice, 0.5),
        ms(&notice, 0.99),
        notice.max() as f64 / 1000.0
    );
    println!(
        "  force-release round trip (baseline): p50 {:.2} ms, p99 {:.2} ms",
        ms(&round_trip, 0.5),
        ms(&round_trip, 0.99)
    );
    println!(
        "  notice / round trip, medians: {:.2}x",
        ms(&notice, 0.5) / ms(&round_trip, 0.5)
    );
    assert_eq!(
        missed, 0,
        "a holder did not learn of its loss within {GIVE_UP:?}"
    );
    restarts(&nodes, &holder, restart_rounds).await;
}

/// A majority restarted empty under a holder, `rounds` times: the time
/// from the last of them answering again to the holder's `lost()`.
async fn restarts(nodes: &Cluster, holder: &Redlock, rounds: usize) {
    let majority: Vec<usize> = (N / 2..N).collect();
    let mut notice = Histogram::<u64>::new(3).expect("histogram");
    for round in 0..rounds {
        let mut lock = holder
            .lock(&format!("restarted-{round}"))
            .await
            .expect("lock");
        lock.auto_extend();
        listening(nodes, &format!("redquorum:released:{}:lost", lock.key())).await;
        let lost = lock.lease().lost();
        for &node in &majority {
            nodes.restart(node).expect("restart");
        }
        // `restart` returns once the node answers: the hold is gone on a majority.
        let back = Instant::now();
        match tokio::time::timeout(GIVE_UP, lost).await {
            Ok(LostReason::NotHeld) => notice.record(micros(back.elapsed())).expect("in range"),
            Ok(other) => panic!("restart round {round}: lost as {other:?}"),
            Err(_) => panic!("restart round {round}: not learned within {GIVE_UP:?}"),
        }
    }
    let ms = |q: f64| notice.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "  {} of {N} nodes restarted empty, {rounds} rounds: last node back to lost(): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        majority.len(),
        ms(0.5),
        ms(0.99),
        notice.max() as f64 / 1000.0
    );
}

/// Waits until a quorum of the nodes has a subscriber on `channel` (the
/// holder's watchdog subscribes at its start).
async fn listening(nodes: &Cluster, channel: &str) {
    let deadline = Instant::now() + GIVE_UP;
    while Instant::now() < deadline {
        let subscribed = (0..nodes.len())
            .filter(|&i| {
                let reply = nodes.command(i, &["PUBSUB", "NUMSUB", channel]);
                let count = match reply {
                    Ok(redquorum_harness::Reply::Array(Some(items))) => {
                        items.get(1).and_then(|c| c.as_int())
                    }
                    _ => None,
                };
                count.is_some_and(|c| c >= 1)
            })
            .count();
        if subscribed > nodes.len() / 2 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the watchdog never subscribed to {channel}");
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
