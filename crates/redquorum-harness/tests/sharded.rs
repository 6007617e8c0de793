//! Sharded masters on real processes: each master a local Redis Cluster;
//! keys reach their primary, slots move with their keys and TTLs (whole,
//! or mid-way with ASK), replicas take over with what they were sent, and
//! a lagging replica's takeover loses what it was not.

use redquorum_harness::{HarnessError, Reply, ShardedCluster, slot_of};

/// A key of master `master` whose slot shard `shard` owns now.
fn key_on_shard(masters: &ShardedCluster, master: usize, shard: usize, prefix: &str) -> String {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .find(|key| masters.shard_of_slot(master, slot_of(key)) == shard)
        .expect("some key lands on every shard")
}

fn text(reply: Reply) -> Option<String> {
    reply.as_text()
}

fn role(masters: &ShardedCluster, master: usize, index: usize) -> String {
    let info = text(
        masters
            .master(master)
            .command(index, &["INFO", "replication"])
            .unwrap(),
    )
    .unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("role:"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[test]
fn urls_name_each_masters_primaries_and_keys_read_back_from_their_primary() {
    let masters = ShardedCluster::start(2, 2, 0).expect("2 masters of 2 shards");
    for m in 0..2 {
        let (p0, p1) = (masters.primary_port(m, 0), masters.primary_port(m, 1));
        assert_eq!(
            masters.url(m),
            format!("redis-cluster://127.0.0.1:{p0}?node=127.0.0.1:{p1}")
        );
    }
    assert_eq!(masters.urls().len(), 2);
    assert_ne!(masters.primary_port(0, 0), masters.primary_port(1, 0));

    let keys: Vec<String> = (0..2)
        .map(|shard| key_on_shard(&masters, 1, shard, "lock:"))
        .collect();
    for key in &keys {
        masters
            .command_for_key(1, key, &["SET", key, key, "PX", "60000"])
            .unwrap();
        assert_eq!(
            text(masters.command_for_key(1, key, &["GET", key]).unwrap()).as_deref(),
            Some(key.as_str())
        );
        // On its primary itself, and on no other process.
        let owner = masters.primary_for_key(1, key);
        let node = masters.master(1);
        for index in 0..node.len() {
            let got = node.command(index, &["GET", key]);
            if node.port(index) == owner {
                assert_eq!(text(got.unwrap()).as_deref(), Some(key.as_str()));
            } else {
                assert!(got.unwrap_err().to_string().contains("MOVED"), "{key}");
            }
        }
        // The other master is another voter: it does not have it.
        assert_eq!(
            text(masters.command_for_key(0, key, &["GET", key]).unwrap()),
            None
        );
    }
    let mut listed: Vec<String> = masters
        .keys(1, "lock:*")
        .unwrap()
        .into_iter()
        .map(|(key, pttl)| {
            assert!(pttl > 0 && pttl <= 60_000, "{key}: {pttl}");
            key
        })
        .collect();
    listed.sort();
    assert_eq!(listed, keys);
}

#[test]
fn migrate_slot_keeps_the_ttl_and_the_old_primary_then_answers_moved() {
    let masters = ShardedCluster::start(2, 2, 0).expect("2 masters of 2 shards");
    let key = key_on_shard(&masters, 0, 1, "lock:");
    let slot = slot_of(&key);
    masters
        .command_for_key(0, &key, &["SET", &key, "v", "PX", "60000"])
        .unwrap();
    let old = masters.primary_index(0, 1);

    masters.migrate_slot(0, slot, 0).unwrap();

    assert_eq!(masters.shard_of_slot(0, slot), 0);
    assert_eq!(masters.primary_for_key(0, &key), masters.primary_port(0, 0));
    let new = masters.primary_index(0, 0);
    let node = masters.master(0);
    assert_eq!(
        text(node.command(new, &["GET", &key]).unwrap()).as_deref(),
        Some("v")
    );
    let pttl = node
        .command(new, &["PTTL", &key])
        .unwrap()
        .as_int()
        .unwrap();
    assert!((30_000..=60_000).contains(&pttl), "TTL not kept: {pttl} ms");
    let moved = node.command(old, &["GET", &key]).unwrap_err().to_string();
    assert!(
        moved.contains(&format!("MOVED {slot} 127.0.0.1:{}", node.port(new))),
        "{moved}"
    );
    // Every process agrees, and the other master is untouched.
    for index in 0..node.len() {
        let slots = format!("{:?}", node.command(index, &["CLUSTER", "SLOTS"]).unwrap());
        assert!(
            slots.contains(&format!("Integer({slot}), Integer({slot})")),
            "{slots}"
        );
    }
    assert_eq!(masters.shard_of_slot(1, slot), 1);
    // Moving it where it is does nothing.
    masters.migrate_slot(0, slot, 0).unwrap();
}

#[test]
fn mid_migration_the_source_answers_ask_for_a_moved_key_only() {
    let masters = ShardedCluster::start(2, 2, 0).expect("2 masters of 2 shards");
    let tag = key_on_shard(&masters, 1, 0, "t");
    let (moved, stayed) = (format!("{{{tag}}}:moved"), format!("{{{tag}}}:stayed"));
    for key in [&moved, &stayed] {
        masters.command_for_key(1, key, &["SET", key, key]).unwrap();
    }
    let source = masters.primary_index(1, 0);
    let target_port = masters.primary_port(1, 1);

    let migration = masters.begin_migration(1, slot_of(&tag), 1).unwrap();
    assert!(migration.move_key(&moved).unwrap());
    let node = masters.master(1);
    let ask = node
        .command(source, &["GET", &moved])
        .unwrap_err()
        .to_string();
    assert!(
        ask.contains(&format!("ASK {} 127.0.0.1:{target_port}", slot_of(&tag))),
        "{ask}"
    );
    assert_eq!(
        text(node.command(source, &["GET", &stayed]).unwrap()).as_deref(),
        Some(stayed.as_str())
    );
    // A cluster client follows the ASK.
    assert_eq!(
        text(
            masters
                .command_for_key(1, &moved, &["GET", &moved])
                .unwrap()
        )
        .as_deref(),
        Some(moved.as_str())
    );
    assert!(matches!(
        migration.move_key("not-in-this-slot"),
        Err(HarnessError::ClusterLayout(_))
    ));
    migration.finish().unwrap();

    assert_eq!(masters.primary_for_key(1, &stayed), target_port);
    for key in [&moved, &stayed] {
        assert_eq!(
            text(masters.command_for_key(1, key, &["GET", key]).unwrap()).as_deref(),
            Some(key.as_str())
        );
    }
}

#[test]
fn failover_promotes_the_replica_with_the_writes_it_was_sent() {
    let masters = ShardedCluster::start(2, 2, 1).expect("2 masters of 2 shards, 1 replica each");
    let key = key_on_shard(&masters, 0, 1, "lock:");
    // WAIT counts the replicas that have this connection's writes.
    let replies = masters
        .commands_for_key(
            0,
            &key,
            &[
                &["SET", &key, "kept", "PX", "60000"],
                &["WAIT", "1", "1000"],
            ],
        )
        .unwrap();
    assert_eq!(
        replies[1].as_int(),
        Some(1),
        "the replica did not acknowledge"
    );
    let (old, replica) = (masters.primary_index(0, 1), masters.replica_index(0, 1));

    masters.failover(0, 1).unwrap();

    assert_eq!(Some(masters.primary_index(0, 1)), replica);
    assert_eq!(masters.replica_index(0, 1), Some(old));
    assert_eq!(role(&masters, 0, masters.primary_index(0, 1)), "master");
    assert_eq!(role(&masters, 0, old), "slave");
    assert_eq!(
        masters.primary_for_key(0, &key),
        masters.master(0).port(replica.unwrap())
    );
    assert_eq!(
        text(masters.command_for_key(0, &key, &["GET", &key]).unwrap()).as_deref(),
        Some("kept")
    );
    // Shard 0 and the other master keep their primaries.
    assert_eq!(masters.primary_index(0, 0), 0);
    assert_eq!(masters.primary_index(1, 1), 1);
    // And back: the old primary, now a linked replica, can take over again.
    masters.failover(0, 1).unwrap();
    assert_eq!(masters.primary_index(0, 1), old);
}

#[test]
fn a_lagging_failover_loses_the_writes_made_while_the_replica_was_stopped() {
    let masters = ShardedCluster::start(2, 2, 1).expect("2 masters of 2 shards, 1 replica each");
    let before = key_on_shard(&masters, 1, 0, "before:");
    let during = key_on_shard(&masters, 1, 0, "during:");
    let replies = masters
        .commands_for_key(
            1,
            &before,
            &[&["SET", &before, "1"], &["WAIT", "1", "1000"]],
        )
        .unwrap();
    assert_eq!(
        replies[1].as_int(),
        Some(1),
        "the replica did not acknowledge"
    );
    let old = masters.primary_index(1, 0);

    let replicated = masters
        .failover_lagging(1, 0, || {
            // Acknowledged by the primary, sent to no replica.
            let replies = masters
                .commands_for_key(1, &during, &[&["SET", &during, "1"], &["WAIT", "1", "200"]])
                .unwrap();
            replies[1].as_int()
        })
        .unwrap();

    assert_eq!(replicated, Some(0));
    assert!(
        !masters.master(1).is_running(old),
        "the old primary stays down"
    );
    assert_eq!(masters.replica_index(1, 0), Some(old));
    assert_eq!(
        text(
            masters
                .command_for_key(1, &before, &["GET", &before])
                .unwrap()
        )
        .as_deref(),
        Some("1")
    );
    assert_eq!(
        text(
            masters
                .command_for_key(1, &during, &["GET", &during])
                .unwrap()
        ),
        None,
        "the new primary has a write it was never sent"
    );
    // Restarted, the old primary comes back empty and follows the new one.
    masters.master(1).restart(old).unwrap();
    masters.wait_settled(1).unwrap();
    assert_eq!(role(&masters, 1, old), "slave");
}

#[test]
fn one_shard_per_master_works_and_bad_requests_say_why() {
    let masters = ShardedCluster::start(2, 1, 0).expect("2 masters of 1 shard");
    for m in 0..2 {
        assert_eq!(
            masters.url(m),
            format!("redis-cluster://127.0.0.1:{}", masters.primary_port(m, 0))
        );
    }
    for key in ["a", "b", "{x}c", "foo"] {
        masters.command_for_key(0, key, &["SET", key, "1"]).unwrap();
        assert_eq!(masters.primary_for_key(0, key), masters.primary_port(0, 0));
    }
    assert_eq!(masters.keys(0, "*").unwrap().len(), 4);
    masters.migrate_slot(0, slot_of("a"), 0).unwrap();

    let refused = |result: Result<(), HarnessError>, wanted: &str| {
        let e = result.expect_err("refused");
        assert!(matches!(e, HarnessError::ClusterLayout(_)), "{e}");
        assert!(e.to_string().contains(wanted), "{e}");
    };
    refused(masters.failover(0, 0), "no replica");
    refused(masters.failover(2, 0), "no master 2");
    refused(masters.migrate_slot(0, 0, 1), "no shard 1");
    refused(masters.migrate_slot(0, 16384, 0), "slot 16384");
    refused(
        masters.begin_migration(0, 0, 0).map(drop),
        "already is on shard 0",
    );
    assert!(ShardedCluster::start(1, 1, 2).is_err());
}
