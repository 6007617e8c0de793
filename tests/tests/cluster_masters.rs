//! Cluster masters (`redis-cluster://`) on real local Redis Clusters: every
//! kind on names spread over shards, group commit across slots, mixed with
//! single servers; a multi-lock across shards refused with a typed error;
//! releases that follow their keys through a slot migration (MOVED and ASK);
//! a promoted replica that lacks a hold does not vote for the longest lease.

mod common;

use common::acl::{LOCKER_COMMANDS, create_user};

use std::time::Duration;

use redquorum::{Error, Ineligible, NodeOutcome, Redlock};
use redquorum_harness::{Cluster, ShardedCluster, slot_of};

/// Local clusters, or a panic with the harness's message.
fn masters(n: usize, shards: usize, replicas: usize) -> ShardedCluster {
    ShardedCluster::start(n, shards, replicas)
        .unwrap_or_else(|e| panic!("cannot start {n} local clusters: {e}"))
}

fn redlock(urls: Vec<String>, ttl: Duration) -> Redlock {
    Redlock::builder()
        .nodes(urls)
        .ttl(ttl)
        .node_timeout(Duration::from_millis(500))
        .retry_delay(Duration::from_millis(5))
        .wait(Duration::from_secs(2))
        .build()
        .expect("valid configuration")
}

/// Every key of the lock prefix on every master (each across its shards).
fn lock_keys(masters: &ShardedCluster) -> Vec<Vec<String>> {
    (0..masters.len())
        .map(|m| {
            let mut keys: Vec<String> = masters
                .keys(m, "lock:*")
                .unwrap()
                .into_iter()
                .map(|(key, _)| key)
                .filter(|key| !key.ends_with(":fence"))
                .collect();
            keys.sort();
            keys
        })
        .collect()
}

/// Two resource names whose lock keys shard 0 and shard 1 serve.
fn names_on_two_shards(masters: &ShardedCluster, redlock: &Redlock) -> (String, String) {
    let shard = |name: &str| masters.shard_of_slot(0, slot_of(redlock.key(name)));
    let on = |wanted: usize| {
        (0..1000)
            .map(|i| format!("n{i}"))
            .find(|name| shard(name) == wanted)
            .unwrap()
    };
    (on(0), on(1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_works_on_cluster_masters_beside_a_single_server() {
    let masters = masters(2, 2, 0);
    let single = Cluster::start(1).unwrap();
    let mut urls = masters.urls();
    urls.push(single.url(0));
    let redlock = redlock(urls, Duration::from_secs(10));
    let (a, b) = names_on_two_shards(&masters, &redlock);

    let lock = redlock.try_lock(&a).await.unwrap();
    assert!(matches!(
        redlock.try_lock(&a).await,
        Err(Error::Contended { .. })
    ));
    let token = lock.fence().await.unwrap();
    lock.release().await.unwrap();

    let owner = redlock.reentrant_owner();
    let outer = owner.try_lock(&b).await.unwrap();
    let inner = owner.try_lock(&b).await.unwrap();
    inner.release().await.unwrap();
    assert!(matches!(
        redlock.try_lock(&b).await,
        Err(Error::Contended { .. })
    ));
    outer.release().await.unwrap();

    let read = redlock.try_read_lock(&a).await.unwrap();
    let read_too = redlock.try_read_lock(&a).await.unwrap();
    assert!(redlock.try_write_lock(&a).await.is_err());
    read.release().await.unwrap();
    read_too.release().await.unwrap();
    let write = redlock.try_write_lock(&a).await.unwrap();
    assert!(write.fence().await.unwrap() > token);
    write.release().await.unwrap();

    let semaphore = redlock.semaphore(&b, 2).unwrap();
    let permits = [
        semaphore.try_acquire().await.unwrap(),
        semaphore.try_acquire().await.unwrap(),
    ];
    assert!(semaphore.try_acquire().await.is_err());
    for permit in permits {
        permit.release().await.unwrap();
    }

    let (index, any) = redlock.lock_any(&[&a, &b]).await.unwrap();
    assert_eq!(any.resource(), [&a, &b][index]);
    any.release().await.unwrap();

    let election = redlock.election(&b).unwrap();
    let leadership = election.try_campaign("me").await.unwrap();
    assert_eq!(election.leader().await.unwrap().unwrap().value(), "me");
    leadership.resign().await.unwrap();

    // An operator's force-release and inspection.
    let stuck = redlock.try_write_lock(&b).await.unwrap();
    let holders = redlock.inspect(&b).await.unwrap().holders(redlock.quorum());
    assert_eq!(holders.len(), 1, "{holders:?}");
    let forced = redlock.force_release(&b).await.unwrap();
    assert!(stuck.fence().await.is_err());
    let next = redlock.try_lock(&b).await.expect("free at once");
    assert!(next.fence().await.unwrap() > forced);
    next.release().await.unwrap();
    drop(stuck);

    common::settles("no lock key left", vec![Vec::<String>::new(); 2], || {
        lock_keys(&masters)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_locks_on_names_of_every_shard_are_batched_and_all_granted() {
    let masters = masters(3, 3, 0);
    let redlock = redlock(masters.urls(), Duration::from_secs(10));
    let names: Vec<String> = (0..300).map(|i| format!("batch:{i}")).collect();
    let shards: std::collections::HashSet<usize> = names
        .iter()
        .map(|name| masters.shard_of_slot(0, slot_of(redlock.key(name))))
        .collect();
    assert_eq!(shards.len(), 3, "the names spread over every shard");
    let locks = futures::future::join_all(names.iter().map(|name| redlock.try_lock(name))).await;
    let locks: Vec<_> = locks.into_iter().map(Result::unwrap).collect();
    // Each grant is on a quorum of the masters. (Not on every one: an
    // acquire still queued for the third when its quorum decided is
    // never sent.)
    let keys = lock_keys(&masters);
    for lock in &locks {
        let on = keys
            .iter()
            .filter(|k| k.iter().any(|key| key == lock.key()));
        assert!(on.count() >= 2, "{}: {keys:?}", lock.key());
    }
    futures::future::join_all(locks.into_iter().map(|lock| lock.release()))
        .await
        .into_iter()
        .for_each(|released| {
            released.unwrap();
        });
    common::settles("no lock key left", vec![Vec::<String>::new(); 3], || {
        lock_keys(&masters)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_across_shards_is_refused_and_sends_nothing() {
    let masters = masters(3, 2, 0);
    let redlock = redlock(masters.urls(), Duration::from_secs(10));
    let (a, b) = names_on_two_shards(&masters, &redlock);
    let err = redlock.try_lock_all(&[&a, &b]).await.unwrap_err();
    assert!(matches!(err, Error::CrossShard { .. }), "{err}");
    assert!(err.to_string().contains("several shards"), "{err}");
    assert_eq!(lock_keys(&masters), vec![Vec::<String>::new(); 3]);
    // Names on one shard: the multi-lock works.
    let shard_of = |name: &str| masters.shard_of_slot(0, slot_of(redlock.key(name)));
    let same = (0..1000)
        .map(|i| format!("n{i}"))
        .find(|name| *name != a && shard_of(name) == shard_of(&a))
        .unwrap();
    let both = redlock.try_lock_all(&[&a, &same]).await.unwrap();
    assert!(redlock.try_lock(&same).await.is_err());
    both.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_moved_by_a_slot_migration_excludes_others_and_is_released_where_it_went() {
    // Five masters: the release returns at three, and the two others must
    // still follow their MOVED after their caller stopped waiting.
    let masters = masters(5, 2, 0);
    let redlock = redlock(masters.urls(), Duration::from_secs(10));
    let other = redlock_named(&masters);
    let lock = redlock.try_lock("moving").await.unwrap();
    let slot = slot_of(redlock.key("moving"));
    let from = masters.shard_of_slot(0, slot);
    for m in 0..5 {
        masters.migrate_slot(m, slot, 1 - from).unwrap();
    }
    // Another client routes by the new map (after a MOVED): still taken.
    assert!(matches!(
        other.try_lock("moving").await,
        Err(Error::Contended { .. })
    ));
    // The holder's release follows MOVED to where the key went.
    lock.release().await.unwrap();
    common::settles("released everywhere", vec![Vec::<String>::new(); 5], || {
        lock_keys(&masters)
    })
    .await;
    other
        .try_lock("moving")
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_mid_migration_follows_ask_to_the_moved_key() {
    let masters = masters(3, 2, 0);
    let redlock = redlock(masters.urls(), Duration::from_secs(10));
    let lock = redlock.try_lock("asked").await.unwrap();
    let key = redlock.key("asked");
    let slot = slot_of(&key);
    let from = masters.shard_of_slot(0, slot);
    // The acquire returns once a quorum answered: the third write may
    // still be on its way, and this test moves the key on every master.
    common::settles("held everywhere", vec![vec![key.clone()]; 3], || {
        lock_keys(&masters)
    })
    .await;
    let migrations: Vec<_> = (0..3)
        .map(|m| {
            let migration = masters.begin_migration(m, slot, 1 - from).unwrap();
            assert!(
                migration.move_key(&key).unwrap(),
                "master {m}: the key moved"
            );
            migration
        })
        .collect();
    lock.release().await.unwrap();
    // A key in an importing slot is visible only after ASKING: the keys
    // are read once the migration is done.
    migrations.into_iter().for_each(|m| m.finish().unwrap());
    common::settles(
        "released on the target",
        vec![Vec::<String>::new(); 3],
        || lock_keys(&masters),
    )
    .await;
}

/// A second client on the same masters.
fn redlock_named(masters: &ShardedCluster) -> Redlock {
    redlock(masters.urls(), Duration::from_secs(10))
}

/// The max TTL of [`holder_and_rival`]'s locks (3 s leases).
const FAILOVER_MAX_TTL: Duration = Duration::from_secs(4);

/// Two clients of `masters` for the failover tests (3 s leases, a 4 s max
/// TTL, a 500 ms node timeout), each once it has locked a name on every
/// shard: it has read the first slot map, and every shard's fresh primary
/// is older than the max TTL (the delayed-restart rule).
async fn holder_and_rival(masters: &ShardedCluster) -> (Redlock, Redlock) {
    let build = || {
        Redlock::builder()
            .nodes(masters.urls())
            .ttl(Duration::from_secs(3))
            .max_ttl(FAILOVER_MAX_TTL)
            .node_timeout(Duration::from_millis(500))
            .build()
            .unwrap()
    };
    let (holder, rival) = (build(), build());
    // A name on every shard: each shard's primary must be old enough.
    let names: Vec<String> = (0..masters.shards())
        .map(|shard| {
            (0..1000)
                .map(|i| format!("warm{i}"))
                .find(|name| masters.shard_of_slot(0, slot_of(holder.key(name))) == shard)
                .unwrap()
        })
        .collect();
    for redlock in [&holder, &rival] {
        for name in &names {
            let warm = common::eventually(FAILOVER_MAX_TTL + Duration::from_secs(3), || async {
                match redlock.try_lock(name).await {
                    Ok(lock) => lock.release().await.is_ok(),
                    Err(_) => false,
                }
            })
            .await;
            assert!(warm, "{name}: {:?}", redlock.health().await);
        }
    }
    (holder, rival)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_replica_without_the_hold_does_not_vote_for_the_longest_lease() {
    let masters = masters(3, 1, 1);
    let (holder, rival) = holder_and_rival(&masters).await;

    // On masters 0 and 1, the hold is written while both replicas lag,
    // then they are promoted without it: only master 2 still has it.
    let runtime = tokio::runtime::Handle::current();
    let lock = masters
        .failover_lagging(0, 0, || {
            masters.failover_lagging(1, 0, || {
                tokio::task::block_in_place(|| runtime.block_on(holder.try_lock("promoted")))
            })
        })
        .unwrap()
        .unwrap();
    let lock = lock.unwrap();
    assert_eq!(lock_keys(&masters)[2], vec![holder.key("promoted")]);

    // The rival finds the new primaries (their old ones are gone; the slot
    // map is read again at least every health-check interval, 5 s)...
    let found = common::eventually(Duration::from_secs(10), || async {
        let health = rival.health().await;
        health[..2].iter().all(|(_, h)| h.down().is_none())
    })
    .await;
    assert!(found, "{:?}", rival.health().await);
    // ...and refuses their votes: no second holder while the first holds.
    let err = match rival.try_lock("promoted").await {
        Ok(_) => panic!("two holders: a promoted replica that lacks the hold voted"),
        Err(err) => err,
    };
    let outcomes = err.outcomes().expect("per-node outcomes");
    let new_primaries = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, NodeOutcome::Refused(Ineligible::NewPrimary { .. })))
        .count();
    // The early decision may come before the second refusal is read.
    assert!(new_primaries >= 1, "{err:?}");
    drop(lock);
    // After the longest lease, the new primaries vote.
    let granted = common::eventually(FAILOVER_MAX_TTL + Duration::from_secs(4), || async {
        match rival.try_lock("promoted").await {
            Ok(lock) => lock.release().await.is_ok(),
            Err(_) => false,
        }
    })
    .await;
    assert!(granted, "{:?}", rival.health().await);
}

#[tokio::test]
async fn a_cluster_url_that_no_server_answers_is_a_down_master() {
    let masters = masters(2, 2, 0);
    let mut urls = masters.urls();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    urls.push(format!("redis-cluster://127.0.0.1:{port}"));
    let redlock = redlock(urls, Duration::from_secs(10));
    let lock = redlock.try_lock("two-of-three").await.unwrap();
    lock.release().await.unwrap();
    let health = redlock.health().await;
    let down = health[2].1.down().unwrap_or_default();
    assert!(down.contains("CLUSTER SLOTS"), "{down}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_on_cluster_masters_is_woken_by_the_release_not_its_backoff() {
    let masters = masters(3, 2, 0);
    let build = || {
        Redlock::builder()
            .nodes(masters.urls())
            .ttl(Duration::from_secs(10))
            .node_timeout(Duration::from_millis(500))
            // A waiter not woken retries only after 5 s.
            .retry_delay(Duration::from_secs(5))
            .retry_jitter(Duration::ZERO)
            .wait(Duration::from_secs(20))
            .build()
            .unwrap()
    };
    let (holder, waiter) = (build(), build());
    // Names on both shards: each channel is subscribed on its own shard.
    let (a, b) = names_on_two_shards(&masters, &holder);
    for name in [a, b] {
        let held = holder.try_lock(&name).await.unwrap();
        // The waiter is waiting: subscribed to the lock's channel on the
        // shard that serves it on every master, and its first attempt made.
        let channel = format!("redquorum:released:{}", holder.key(&name));
        let key = holder.key(&name);
        let evalsha = |m: usize| {
            let info = masters
                .command_for_key(m, &key, &["INFO", "commandstats"])
                .unwrap();
            let info = info.as_text().unwrap_or_default();
            info.lines()
                .find_map(|line| line.strip_prefix("cmdstat_evalsha:calls="))
                .and_then(|rest| rest.split(',').next()?.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let before: Vec<u64> = (0..3).map(evalsha).collect();
        let waiting = tokio::spawn({
            let (waiter, name) = (waiter.clone(), name.clone());
            async move { waiter.lock(&name).await }
        });
        let subscribed = |m: usize| {
            let reply = masters
                .command_for_key(m, &key, &["PUBSUB", "SHARDNUMSUB", &channel])
                .unwrap();
            matches!(&reply, redquorum_harness::Reply::Array(Some(r)) if r.get(1).and_then(redquorum_harness::Reply::as_int) == Some(1))
        };
        let waiting_now = common::eventually(Duration::from_secs(5), || {
            let ready = (0..3).all(|m| subscribed(m) && evalsha(m) > before[m]);
            async move { ready }
        })
        .await;
        assert!(waiting_now, "{name}: the waiter never subscribed and tried");
        let released = std::time::Instant::now();
        held.release().await.unwrap();
        let lock = waiting.await.unwrap().unwrap();
        let woken_after = released.elapsed();
        assert!(
            woken_after < Duration::from_secs(2),
            "{name}: woken {woken_after:?} after the release: by its backoff, not a notification"
        );
        lock.release().await.unwrap();
    }
}

/// What a cluster master's user needs beyond a single server's
/// (docs/operations.md, "ACL user").
const CLUSTER_COMMANDS: &[&str] = &[
    "+cluster|slots",
    "+info",
    "+asking",
    "+ssubscribe",
    "+sunsubscribe",
    "+spublish",
    "&redquorum:released:*",
];

/// Every master's URL with `user:password@` in it.
fn urls_as(masters: &ShardedCluster, credentials: &str) -> Vec<String> {
    masters
        .urls()
        .into_iter()
        .map(|url| url.replacen("://", &format!("://{credentials}@"), 1))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_with_the_documented_cluster_commands_locks_and_follows_ask() {
    let masters = masters(3, 2, 0);
    let with_all: Vec<&str> = LOCKER_COMMANDS
        .iter()
        .chain(CLUSTER_COMMANDS)
        .copied()
        .collect();
    let without_asking: Vec<&str> = with_all
        .iter()
        .copied()
        .filter(|c| *c != "+asking")
        .collect();
    let without_slots: Vec<&str> = with_all
        .iter()
        .copied()
        .filter(|c| *c != "+cluster|slots")
        .collect();
    let without_info: Vec<&str> = with_all.iter().copied().filter(|c| *c != "+info").collect();
    for m in 0..3 {
        create_user(masters.master(m), "locker", "pw-Cl1", &with_all);
        create_user(masters.master(m), "no-asking", "pw-Cl2", &without_asking);
        create_user(masters.master(m), "no-slots", "pw-Cl3", &without_slots);
        create_user(masters.master(m), "no-info", "pw-Cl4", &without_info);
    }
    let as_user =
        |credentials: &str| redlock(urls_as(&masters, credentials), Duration::from_secs(10));

    // Without CLUSTER SLOTS no slot map: every master is down.
    let err = as_user("no-slots:pw-Cl3")
        .try_lock("acl")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err}");
    assert!(err.to_string().contains("CLUSTER SLOTS"), "{err}");

    // Without CLUSTER INFO no config epoch: a failover since the last map
    // cannot be ruled out, and no shard's vote counts.
    let err = as_user("no-info:pw-Cl4").try_lock("acl").await.unwrap_err();
    let outcomes = err.outcomes().expect("per-node outcomes");
    let refused = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, NodeOutcome::Refused(Ineligible::NewPrimary { .. })))
        .count();
    // Decided as soon as two of three refused.
    assert!(refused >= 2, "{err:?}");

    // With the documented set: a release mid-migration follows ASK; without
    // ASKING it cannot, and the key stays where it went (until its TTL).
    for (credentials, follows) in [("locker:pw-Cl1", true), ("no-asking:pw-Cl2", false)] {
        let redlock = as_user(credentials);
        let name = format!("acl-{follows}");
        let lock = redlock.try_lock(&name).await.unwrap();
        let key = redlock.key(&name);
        let slot = slot_of(&key);
        let from = masters.shard_of_slot(0, slot);
        let left = |m: usize| masters.keys(m, &key).unwrap().len();
        // The acquire returns at a quorum: the third write may be on its way.
        common::settles("held everywhere", vec![1; 3], || (0..3).map(left).collect()).await;
        let migrations: Vec<_> = (0..3)
            .map(|m| {
                let migration = masters.begin_migration(m, slot, 1 - from).unwrap();
                assert!(migration.move_key(&key).unwrap());
                migration
            })
            .collect();
        let released = lock.release().await;
        // A key in an importing slot is visible only after ASKING: read
        // once the migration is done.
        migrations.into_iter().for_each(|m| m.finish().unwrap());
        if follows {
            released.unwrap();
            common::settles("released through ASK", vec![0; 3], || {
                (0..3).map(left).collect()
            })
            .await;
        } else {
            assert!(released.is_err(), "released without ASKING: {released:?}");
            assert_eq!((0..3).map(left).collect::<Vec<_>>(), vec![1; 3]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slots_migrated_off_a_promoted_replica_carry_its_refusal_along() {
    let masters = masters(3, 2, 1);
    let (holder, rival) = holder_and_rival(&masters).await;
    // A name shard 0 serves: its hold is lost on masters 0 and 1 by a
    // lagging failover of shard 0...
    let name = (0..1000)
        .map(|i| format!("carried{i}"))
        .find(|name| masters.shard_of_slot(0, slot_of(holder.key(name))) == 0)
        .unwrap();
    let runtime = tokio::runtime::Handle::current();
    let lock = masters
        .failover_lagging(0, 0, || {
            masters.failover_lagging(1, 0, || {
                tokio::task::block_in_place(|| runtime.block_on(holder.try_lock(&name)))
            })
        })
        .unwrap()
        .unwrap();
    let lock = lock.unwrap();
    assert_eq!(lock_keys(&masters)[2], vec![holder.key(&name)]);
    // ...and its slot then moves to shard 1, whose primary did not fail over.
    let slot = slot_of(holder.key(&name));
    for m in 0..2 {
        masters.migrate_slot(m, slot, 1).unwrap();
    }
    // The rival reads the new map (the shard 0 primaries it knew are gone)...
    let found = common::eventually(Duration::from_secs(10), || async {
        let health = rival.health().await;
        health[..2].iter().all(|(_, h)| h.down().is_none())
    })
    .await;
    assert!(found, "{:?}", rival.health().await);
    // ...and shard 1, serving slots that lack the hold, does not vote.
    let err = match rival.try_lock(&name).await {
        Ok(_) => panic!("two holders: the slot's new owner voted with the hold missing"),
        Err(err) => err,
    };
    let outcomes = err.outcomes().expect("per-node outcomes");
    let refused = outcomes
        .iter()
        .filter(|(_, o)| matches!(o, NodeOutcome::Refused(Ineligible::NewPrimary { .. })))
        .count();
    // The early decision may come before the second refusal is read.
    assert!(refused >= 1, "{err:?}");
    drop(lock);
}
