//! A minority of nodes down costs nothing per call: a node that refuses
//! connections, a stopped server (SIGSTOP) and a black hole (a proxy that
//! holds every byte) are each marked down (a silent one after at most one
//! node timeout, which no call waits out: none needs its answer), then
//! skipped at once by acquire, extend and release; waiters are still woken
//! by the release; the node rejoins when it answers
//! again and keeps no key of ours once it does.
//! A majority down fails every call at once, naming the nodes. Real nodes.
//!
//! The node timeout here is 2 s, so a call that waited for the down node
//! would take at least that long; each call is bounded below it (three
//! quarters of it: room for a loaded machine, none for a wait).

mod common;

use std::future::Future;
use std::time::{Duration, Instant};

use common::{cluster, eventually, values};
use redquorum::{Error, LockOptions, NodeOutcome, Redlock};
use redquorum_harness::{Cluster, FaultProxy};

const NODE_TIMEOUT: Duration = Duration::from_secs(2);
/// The most one call may take once the node is known down: less than the
/// node timeout, so a call that waited for the down node cannot pass.
const FAST: Duration = Duration::from_millis(1500);
/// Long enough that a waiter relying on its backoff never retries here.
const HOUR: Duration = Duration::from_secs(3600);
/// Bound on every wait for a state change (generous for a loaded machine).
const WITHIN: Duration = Duration::from_secs(20);
const TTL: Duration = Duration::from_secs(5);

fn redlock_on(urls: Vec<String>, retry_delay: Duration) -> Redlock {
    Redlock::builder()
        .nodes(urls)
        .ttl(TTL)
        .node_timeout(NODE_TIMEOUT)
        .lock_options(LockOptions {
            ttl: TTL,
            wait: WITHIN,
            retry_delay,
            retry_jitter: Duration::from_millis(1),
            ..LockOptions::default()
        })
        .build()
        .expect("valid configuration")
}

/// Runs `call`, failing the test when it took longer than [`FAST`].
async fn fast<T>(what: &str, call: impl Future<Output = T>) -> T {
    let start = Instant::now();
    let result = call.await;
    let took = start.elapsed();
    assert!(
        took < FAST,
        "{what} took {took:?}: it waited for the down node"
    );
    result
}

/// Whether `redlock` sees node `index` down (`true`) or up (`false`).
async fn is_down(redlock: &Redlock, index: usize) -> bool {
    redlock.health().await[index].1.down().is_some()
}

/// How one node is taken down and brought back.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// kill -9: connections refused until it restarts (empty).
    Killed,
    /// SIGSTOP: connections open, nothing answered until SIGCONT.
    Stopped,
    /// A proxy holding every byte until healed.
    BlackHole,
}

/// Five nodes, node 4 behind a fault proxy (used only by the black hole).
struct Setup {
    cluster: Cluster,
    proxy: FaultProxy,
}

impl Setup {
    fn start() -> Self {
        let cluster = cluster(5);
        let proxy = FaultProxy::start(&format!("127.0.0.1:{}", cluster.port(4))).unwrap();
        Self { cluster, proxy }
    }

    fn urls(&self) -> Vec<String> {
        let mut urls = self.cluster.urls();
        urls[4] = self.proxy.url();
        urls
    }

    fn strike(&self, fault: Fault) {
        match fault {
            Fault::Killed => self.cluster.kill(4).unwrap(),
            Fault::Stopped => self.cluster.pause(4).unwrap(),
            Fault::BlackHole => self.proxy.stall(),
        }
    }

    fn heal(&self, fault: Fault) {
        match fault {
            Fault::Killed => self.cluster.restart(4).unwrap(),
            Fault::Stopped => self.cluster.resume(4).unwrap(),
            Fault::BlackHole => self.proxy.heal(),
        }
    }
}

async fn a_down_node_costs_nothing_per_call(fault: Fault) {
    let setup = Setup::start();
    let redlock = redlock_on(setup.urls(), Duration::from_millis(5));
    let waiter = redlock_on(setup.urls(), HOUR);
    common::warm_up(&redlock).await;
    common::warm_up(&waiter).await;
    setup.strike(fault);

    // Even the first calls do not wait for it: no decision needs it (a
    // release returns once a quorum confirmed it).
    let first = fast("the first acquire", redlock.try_lock("first")).await;
    let mut first = first.expect("four nodes are enough");
    fast("the first extend", first.extend()).await.unwrap();
    fast("the first release", first.release()).await.unwrap();
    // Refused at once, or silent for one node timeout: then it is down.
    for (name, handle) in [("redlock", &redlock), ("waiter", &waiter)] {
        if !is_down(handle, 4).await {
            // A silent node is found out by a call left unanswered.
            let _ = handle.try_lock("probe").await.map(|l| l.forget());
        }
        let down = eventually(WITHIN, || is_down(handle, 4)).await;
        assert!(down, "{fault:?}: {name} never marked node 4 down");
    }

    for i in 0..20 {
        let name = format!("cycle-{i}");
        let mut lock = fast("an acquire", redlock.try_lock(&name)).await.unwrap();
        fast("an extend", lock.extend()).await.unwrap();
        fast("a release", lock.release()).await.unwrap();
    }

    // A refusal names the down node by its typed outcome.
    let held = redlock.try_lock("held").await.unwrap();
    let error = fast("a contended acquire", waiter.try_lock("held"))
        .await
        .unwrap_err();
    let Error::Contended { outcomes, .. } = &error else {
        panic!("{fault:?}: expected contended, got {error:?}");
    };
    let (node, outcome) = outcomes.iter().nth(4).unwrap();
    assert!(
        matches!(outcome, NodeOutcome::Down(_)),
        "{fault:?}: {node} was {outcome}"
    );
    assert!(error.to_string().contains("down"), "{error}");

    // The release still wakes a waiter of another process (its backoff is an hour).
    let task = tokio::spawn({
        let waiter = waiter.clone();
        async move { waiter.lock("held").await }
    });
    let subscribed = eventually(WITHIN, || async {
        (0..4).all(|i| common::subscribers(&setup.cluster, i, &redlock.key("held")) >= 1)
    })
    .await;
    assert!(subscribed, "the waiter never subscribed");
    let released = Instant::now();
    fast("a release", held.release()).await.unwrap();
    let woken = tokio::time::timeout(WITHIN, task).await;
    let handed = woken.expect("the waiter was not woken").unwrap().unwrap();
    // Nor did the waiter wait for its subscription on the down node.
    let handed_after = released.elapsed();
    assert!(
        handed_after < FAST,
        "{fault:?}: handed over after {handed_after:?}"
    );
    handed.release().await.unwrap();

    // Back: it rejoins and holds our locks again; no key of ours is left.
    setup.heal(fault);
    let up = eventually(WITHIN, || async { !is_down(&redlock, 4).await }).await;
    assert!(up, "{fault:?}: node 4 never rejoined");
    let on_all = eventually(WITHIN, || async {
        let Ok(lock) = redlock.try_lock("after").await else {
            return false;
        };
        let all = values(&setup.cluster, lock.key())
            .iter()
            .all(Option::is_some);
        lock.release().await.unwrap();
        all
    })
    .await;
    assert!(on_all, "{fault:?}: node 4 does not hold locks again");
    let names = ["first", "held", "after", "probe"]
        .into_iter()
        .map(str::to_owned)
        .chain((0..20).map(|i| format!("cycle-{i}")));
    let keys: Vec<String> = names.map(|name| redlock.key(&name)).collect();
    let clean = eventually(TTL + WITHIN, || async {
        keys.iter()
            .all(|key| values(&setup.cluster, key).iter().all(Option::is_none))
    })
    .await;
    let left: Vec<_> = keys
        .iter()
        .map(|key| (key, values(&setup.cluster, key)))
        .filter(|(_, v)| v.iter().any(Option::is_some))
        .collect();
    assert!(clean, "{fault:?}: keys left behind: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_is_skipped_at_once_and_rejoins_after_its_restart() {
    a_down_node_costs_nothing_per_call(Fault::Killed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_node_costs_one_node_timeout_then_is_skipped_until_it_resumes() {
    a_down_node_costs_nothing_per_call(Fault::Stopped).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_node_costs_one_node_timeout_then_is_skipped_until_healed() {
    a_down_node_costs_nothing_per_call(Fault::BlackHole).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_majority_down_fails_every_call_at_once_naming_the_nodes() {
    let nodes = cluster(5);
    let redlock = redlock_on(nodes.urls(), Duration::from_millis(5));
    common::warm_up(&redlock).await;
    for i in 0..3 {
        nodes.kill(i).unwrap();
    }
    // Down at the first failure ("connection closed"), then refused at
    // each reconnect attempt.
    let down = eventually(WITHIN, || async {
        let health = redlock.health().await;
        health[..3]
            .iter()
            .all(|(_, h)| h.down().is_some_and(|cause| cause.contains("refused")))
    })
    .await;
    assert!(down, "the killed nodes were never marked down");
    for i in 0..10 {
        let error = fast("an acquire", redlock.try_lock(&format!("m-{i}")))
            .await
            .unwrap_err();
        let Error::Unavailable { outcomes, .. } = &error else {
            panic!("expected unavailable, got {error:?}");
        };
        for (node, outcome) in outcomes.iter().take(3) {
            let NodeOutcome::Down(cause) = outcome else {
                panic!("{node}: expected down, got {outcome}");
            };
            assert_eq!(cause.node(), node);
            assert!(cause.to_string().contains("refused"), "{cause}");
        }
        assert!(error.to_string().contains("connection refused"), "{error}");
    }
}
