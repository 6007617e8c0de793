//! An operator's calls on real nodes: owner information read back, listing
//! held resources by prefix, force-release that fences the ousted holder
//! off, lock-delay after an unclean loss.

mod common;

use std::time::{Duration, Instant};

use common::{cluster, eventually, redlock};
use redquorum::{Error, LockOptions, OwnerInfo, Redlock};
use redquorum_harness::{FaultProxy, ProxyMode};

#[tokio::test]
async fn owner_information_is_stored_with_the_hold_and_read_back_per_node() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10))
        .with_owner_info(OwnerInfo::here("nightly: report, v2"));
    let lock = redlock.try_lock("report").await.unwrap();
    common::assert_held_on(&nodes, &lock, 3).await;
    let inspection = redlock.inspect("report").await.unwrap();
    for (node, view) in inspection.nodes() {
        let view = view.unwrap_or_else(|e| panic!("{node}: {e}"));
        assert_eq!(view.kind(), Some("lock"));
        let hold = &view.holds()[0];
        assert_eq!(hold.token(), lock.owner().to_string());
        let info = hold.owner_info().expect("stored");
        assert_eq!(
            (info.note(), info.pid()),
            ("nightly: report, v2", std::process::id())
        );
    }
    lock.release().await.unwrap();
}

#[tokio::test]
async fn list_finds_held_resources_of_every_kind_by_prefix_and_is_bounded() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let a = redlock.try_lock("jobs:a").await.unwrap();
    let b = redlock.try_read_lock("jobs:b*[x]").await.unwrap();
    let c = redlock
        .semaphore("jobs:c}", 2)
        .unwrap()
        .try_acquire()
        .await
        .unwrap();
    let d = redlock.try_lock("mail").await.unwrap();
    let starred = redlock.try_lock("jobs*").await.unwrap();
    let listed = redlock.list("jobs:", 100).await.unwrap();
    assert_eq!(listed, ["jobs:a", "jobs:b*[x]", "jobs:c}"]);
    assert_eq!(
        redlock.list("jobs*", 100).await.unwrap(),
        ["jobs*"],
        "glob characters are literal"
    );
    assert_eq!(redlock.list("jobs:", 2).await.unwrap().len(), 2);
    b.release().await.unwrap();
    assert_eq!(
        redlock.list("jobs:", 100).await.unwrap(),
        ["jobs:a", "jobs:c}"]
    );
    nodes.kill(1).unwrap();
    nodes.kill(2).unwrap();
    let err = redlock.list("jobs:", 100).await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    drop((a, c, d, starred));
}

#[tokio::test]
async fn force_release_frees_the_resource_and_fences_the_ousted_holder_off() {
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let mut stuck = redlock.try_write_lock("ledger").await.unwrap();
    let lease = stuck.lease();
    let fence = redlock.force_release("ledger").await.unwrap();
    assert_eq!(
        common::kinds(&nodes, &redlock.key("ledger")),
        [None, None, None]
    );
    // The ousted holder can neither get a token nor extend.
    let err = stuck.fence().await.unwrap_err();
    assert!(matches!(err, Error::Lost { .. }), "{err}");
    assert!(stuck.extend().await.is_err());
    assert!(!lease.is_valid());
    let next = redlock.try_lock("ledger").await.expect("free at once");
    assert!(next.fence().await.unwrap() > fence);
    next.release().await.unwrap();
    nodes.kill(0).unwrap();
    nodes.kill(1).unwrap();
    let err = redlock.force_release("ledger").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
}

/// A force-release removes what keeps others out besides holds: a
/// lock-delay (whether an acquire has already turned the vanished hold into
/// one or the expired hold is still there) and a waiting writer's intent.
#[tokio::test]
async fn force_release_clears_a_lock_delay_and_a_waiting_writers_intent() {
    const TTL: Duration = Duration::from_secs(1);
    let nodes = cluster(3);
    let redlock = redlock(&nodes, TTL)
        .with_options(&LockOptions {
            ttl: TTL,
            lock_delay: Duration::from_secs(60),
            ..Default::default()
        })
        .unwrap();
    for name in ["delayed", "expired"] {
        redlock.try_lock(name).await.unwrap().forget();
    }
    // "delayed": a refused acquire records the lock-delay; "expired" is only
    // read, so its expired hold stays as it was.
    let refused = eventually(TTL * 5, || async {
        matches!(
            redlock.try_lock("delayed").await,
            Err(Error::Contended { .. })
        ) && redlock.inspect("delayed").await.is_ok_and(|i| {
            i.nodes()
                .all(|(_, view)| view.is_ok_and(|v| v.holds().is_empty() && v.blocked().is_some()))
        })
    })
    .await;
    assert!(refused, "no lock-delay recorded");
    let expired = eventually(TTL * 5, || async {
        redlock.inspect("expired").await.is_ok_and(|i| {
            i.nodes()
                .all(|(_, view)| view.is_ok_and(|v| v.holds().is_empty() && v.blocked().is_some()))
        })
    })
    .await;
    assert!(expired, "the hold never expired");
    for name in ["delayed", "expired"] {
        redlock.force_release(name).await.unwrap();
        assert_eq!(
            common::kinds(&nodes, &redlock.key(name)),
            [None, None, None]
        );
        redlock.try_lock(name).await.expect("free at once").forget();
    }
    // A reader holds "book", and a writer's intent waits on every node.
    let reader = redlock.try_read_lock("book").await.unwrap();
    let key = redlock.key("book");
    for i in 0..3 {
        let until = (common::node_ms(&nodes, i).unwrap() + 60_000).to_string();
        nodes
            .command(i, &["HSET", &key, "intent", "w", "intent-exp", &until])
            .unwrap();
    }
    let blocked = redlock.try_read_lock("book").await.unwrap_err();
    assert!(matches!(blocked, Error::Contended { .. }), "{blocked}");
    redlock.force_release("book").await.unwrap();
    assert_eq!(common::kinds(&nodes, &key), [None, None, None]);
    redlock
        .try_read_lock("book")
        .await
        .expect("free at once")
        .forget();
    drop(reader);
}

/// A vanished hold found by a force-release's read, which an acquire turns
/// into a lock-delay on a node before the removal lands there, goes with
/// its lock-delay (the record says whose delay it is).
#[tokio::test]
async fn a_lock_delay_started_between_the_read_and_the_removal_is_cleared() {
    const TTL: Duration = Duration::from_secs(1);
    let nodes = cluster(3);
    let proxy = FaultProxy::start(&format!("127.0.0.1:{}", nodes.port(0))).unwrap();
    let mut urls = nodes.urls();
    urls[0] = proxy.url();
    let operator = Redlock::builder()
        .nodes(urls)
        .node_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    common::warm_up(&operator).await;
    let delayed = LockOptions {
        ttl: TTL,
        lock_delay: Duration::from_secs(60),
        ..Default::default()
    };
    let redlock = redlock(&nodes, TTL).with_options(&delayed).unwrap();
    redlock.try_lock("press").await.unwrap().forget();
    let key = redlock.key("press");
    // Expired, and nothing has turned it into a lock-delay yet.
    let expired = eventually(TTL * 5, || async {
        (0..3).all(|i| {
            common::record(&nodes, i, &key)
                .live_tokens(common::node_ms(&nodes, i).unwrap())
                .is_empty()
        })
    })
    .await;
    assert!(expired, "the hold never expired");
    // The operator's read and removal reach node 0 only when the proxy
    // heals; an acquire records the lock-delay there first.
    proxy.set_mode(ProxyMode::Stall);
    let forced = operator.force_release("press").await;
    assert!(forced.is_ok(), "{forced:?}");
    // Free on nodes 1 and 2; on node 0 it meets the expired hold, which
    // it turns into a lock-delay.
    let between = redlock.try_lock("press").await.expect("free on 2 of 3");
    between.release().await.unwrap();
    let blocked_field = |i| nodes.command(i, &["HEXISTS", &key, "blocked"]).unwrap();
    // Node 0's acquire may land after the quorum of nodes 1 and 2 decided.
    let blocked = eventually(common::LANDS_WITHIN, || async {
        blocked_field(0) == redquorum_harness::Reply::Integer(1)
    })
    .await;
    assert!(blocked, "no lock-delay on node 0");
    proxy.set_mode(ProxyMode::Pass);
    operator.inspect("press").await.unwrap();
    assert_eq!(common::kinds(&nodes, &key), [None, None, None]);
    redlock
        .try_lock("press")
        .await
        .expect("free at once")
        .forget();
}

/// A force-release's removal is sent also to nodes it cannot reach now
/// (it lands when they come back, behind what came before it). Landing
/// after the call returned, it must not take anything of a holder granted
/// since: neither when the call failed (3 of 5 nodes cut off: its read
/// found no quorum, so it removed nothing anywhere) nor when it succeeded
/// (2 of 5 cut off: it ousted the holder it read on the other 3, and its
/// removal reaches the 2 later, where the later holder now is).
#[tokio::test]
async fn a_force_release_that_lands_late_does_not_oust_a_later_holder() {
    let nodes = cluster(5);
    let proxies: Vec<FaultProxy> = (0..3)
        .map(|i| FaultProxy::start(&format!("127.0.0.1:{}", nodes.port(i))).unwrap())
        .collect();
    let mut urls = nodes.urls();
    for (url, proxy) in urls.iter_mut().zip(&proxies) {
        *url = proxy.url();
    }
    let operator = Redlock::builder()
        .nodes(urls)
        .node_timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    common::warm_up(&operator).await;
    let holder = redlock(&nodes, Duration::from_secs(30));
    for cut in [3, 2] {
        let name = format!("ledger-{cut}");
        let stuck = holder.try_lock(&name).await.unwrap();
        // The operator's calls to the first `cut` nodes are held on their
        // way, in order.
        proxies[..cut]
            .iter()
            .for_each(|p| p.set_mode(ProxyMode::Stall));
        let forced = operator.force_release(&name).await;
        if cut == 3 {
            assert!(
                matches!(forced, Err(Error::Unavailable { .. })),
                "{forced:?}"
            );
        } else {
            forced.expect("a quorum read and acted");
        }
        // Gone everywhere before the later holder comes (ousted on 3 nodes
        // when the call succeeded: its release then fails, having answered
        // from every node), so the later holder is on all 5.
        let stuck_key = (stuck.key().to_owned(), stuck.owner().to_string());
        let _released_or_ousted = stuck.release().await;
        // (A release returns at a quorum: the last nodes' may be on their way.)
        let gone = eventually(common::LANDS_WITHIN, || async {
            common::held_on(&nodes, &stuck_key.0, &stuck_key.1) == 0
        })
        .await;
        assert!(gone, "cut {cut}: the first holder is still on some node");
        let later = holder.try_lock(&name).await.expect("free");
        let (key, owner) = (later.key().to_owned(), later.owner().to_string());
        let on = || {
            (0..5)
                .filter(|&i| common::holds(&nodes, i, &key, &owner))
                .count()
        };
        // Before the held-up force-release can land: on every node (the
        // acquire returns at a quorum; the last writes may be on their way).
        let everywhere = eventually(common::LANDS_WITHIN, || async { on() == 5 }).await;
        assert!(everywhere, "granted on {} nodes", on());
        proxies.iter().for_each(|p| p.set_mode(ProxyMode::Pass));
        // Sent behind the force-release on the same connections: once every
        // node answered, the force-release has landed everywhere.
        operator.inspect(&name).await.unwrap();
        assert_eq!(
            on(),
            5,
            "cut {cut}: the late force-release ousted the later holder"
        );
        let rival = holder.try_lock(&name).await;
        assert!(rival.is_err(), "cut {cut}: two holders of {name}");
        later.release().await.unwrap();
    }
}

#[tokio::test]
async fn a_lock_delay_blocks_a_vanished_holders_resource_but_not_a_released_one() {
    // Seconds, not milliseconds: a loaded machine that stalls a few hundred
    // ms must not let a hold expire between its acquire and its release
    // (which would rightly start the delay on that node).
    const TTL: Duration = Duration::from_secs(2);
    const DELAY: Duration = Duration::from_secs(3);
    let nodes = cluster(3);
    let redlock = redlock(&nodes, TTL)
        .with_options(&LockOptions {
            ttl: TTL,
            lock_delay: DELAY,
            ..Default::default()
        })
        .unwrap();
    // A clean release frees the resource at once.
    let released = redlock.try_lock("press").await.unwrap();
    released.release().await.unwrap();
    redlock
        .try_lock("press")
        .await
        .expect("no delay after a release")
        .forget();
    // The holder above vanished (forgotten: no release). After its TTL the
    // resource stays blocked for the delay, on the quorum its grant reached
    // (a straggler may have refused it: the release before it returned at
    // a quorum, so that node could still be applying it).
    let vanished_at = Instant::now();
    let last = std::cell::RefCell::new(String::new());
    let blocked = eventually(TTL + DELAY / 2, || async {
        let inspection = redlock.inspect("press").await.unwrap();
        *last.borrow_mut() = format!("{inspection:?}");
        let blocking = inspection
            .nodes()
            .filter(|(_, view)| view.is_ok_and(|v| v.holds().is_empty() && v.blocked().is_some()))
            .count();
        blocking >= redlock.quorum()
    })
    .await;
    assert!(
        blocked,
        "no lock-delay recorded after the hold expired: {}",
        last.borrow()
    );
    let err = redlock.try_lock("press").await.unwrap_err();
    assert!(matches!(err, Error::Contended { .. }), "{err}");
    let free = eventually(DELAY + Duration::from_secs(5), || async {
        redlock
            .try_lock("press")
            .await
            .map(|lock| lock.forget())
            .is_ok()
    })
    .await;
    assert!(free, "still blocked long after the delay");
    assert!(
        vanished_at.elapsed() >= DELAY,
        "granted after {:?}, before the {DELAY:?} delay",
        vanished_at.elapsed()
    );
}

/// The torture operator's assumption (`redquorum torture --inspect-every`):
/// whatever the kind, inspecting the resource a workload asked for names
/// its holder by the owner token the grant reported, and names no one once
/// it is released or force-released.
#[tokio::test]
async fn inspect_names_the_holder_of_every_kind_by_its_owner_token() {
    use redquorum_adapter::{KindLocker, LockKind, Locker};
    let nodes = cluster(3);
    let redlock = redlock(&nodes, Duration::from_secs(10));
    let quorum = redlock.quorum();
    for kind in std::iter::once(LockKind::Plain).chain(LockKind::BESIDE_PLAIN) {
        let locker = KindLocker::for_history(redlock.clone(), kind);
        let resource = format!("inspected:{kind}");
        let grant = locker.acquire(&resource).await.unwrap();
        let holders = redlock.inspect(&resource).await.unwrap().holders(quorum);
        let tokens: Vec<&str> = holders.iter().map(|(_, token)| token.as_str()).collect();
        assert_eq!(tokens, [grant.owner.as_str()], "{kind}: {holders:?}");
        locker.release(grant.held).await.unwrap();
        let after = redlock.inspect(&resource).await.unwrap().holders(quorum);
        assert!(after.is_empty(), "{kind} released: {after:?}");
        let ousted = locker.acquire(&resource).await.unwrap();
        redlock.force_release(&resource).await.unwrap();
        let after = redlock.inspect(&resource).await.unwrap().holders(quorum);
        assert!(after.is_empty(), "{kind} force-released: {after:?}");
        drop(ousted);
    }
}
