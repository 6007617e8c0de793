//! Unit tests of health/eligibility.rs: the vote rules and the probe cache.

use super::*;

#[test]
fn an_uptime_in_whole_seconds_never_makes_a_node_look_older_than_it_is() {
    let probed = Instant::now() + Duration::from_secs(100);
    // Up 0.2 s across a second boundary: INFO says 1.
    let real_start = probed - Duration::from_millis(200);
    assert!(assumed_start(probed, Duration::from_secs(1)) >= real_start);
    // Up 2.9 s: INFO says 2 or 3; either way not older than 2.9 s.
    let real_start = probed - Duration::from_millis(2900);
    for said in [2, 3] {
        assert!(assumed_start(probed, Duration::from_secs(said)) >= real_start);
    }
    assert_eq!(assumed_start(probed, Duration::ZERO), probed);
}

#[test]
fn a_server_too_old_for_the_scripts_is_refused_whatever_its_durability() {
    let now = Instant::now();
    let old = Probe {
        role: Role::Master,
        durability: Durability::Fsync,
        version: Some("4.0.14".into()),
        ..Probe::default()
    };
    let expected = Some(Ineligible::ServerTooOld {
        version: "4.0.14".into(),
    });
    assert_eq!(refusal(&old, Some(now), true, None, now), expected);
    assert_eq!(
        refusal(&old, Some(now), true, Some(Duration::ZERO), now),
        expected
    );
    let fine = Probe {
        version: Some("5.0.10".into()),
        ..old
    };
    assert_eq!(refusal(&fine, Some(now), true, None, now), None);
}

#[test]
fn refusal_follows_the_delayed_restart_rule() {
    let now = Instant::now();
    let max = Some(Duration::from_secs(10));
    let young = Some(now - Duration::from_secs(3));
    let old = Some(now - Duration::from_secs(11));
    let volatile = Probe {
        role: Role::Master,
        durability: Durability::NotDurable,
        ..Probe::default()
    };
    let fsync = Probe {
        durability: Durability::Fsync,
        ..volatile.clone()
    };
    assert!(matches!(
        refusal(&volatile, young, true, max, now),
        Some(Ineligible::RecentRestart { .. })
    ));
    assert_eq!(refusal(&volatile, old, true, max, now), None);
    assert_eq!(refusal(&fsync, young, true, max, now), None);
    // the rule is off without a max ttl
    assert_eq!(refusal(&volatile, young, true, None, now), None);
    // unknown uptime (INFO denied) cannot clear a node that is not durable
    assert_eq!(
        refusal(&volatile, None, true, max, now),
        Some(Ineligible::UnknownUptime)
    );
    assert_eq!(refusal(&fsync, None, true, max, now), None);
    assert_eq!(
        refusal(&volatile, old, false, max, now),
        Some(Ineligible::Unverified)
    );
    let replica = Probe {
        role: Role::Replica,
        ..fsync
    };
    assert_eq!(
        refusal(&replica, old, true, None, now),
        Some(Ineligible::Replica)
    );
    // unknown durability counts as not durable
    let unknown = Probe {
        durability: Durability::Unknown,
        ..volatile.clone()
    };
    assert!(refusal(&unknown, young, true, max, now).is_some());
}

fn role(index: u8) -> Role {
    [Role::Master, Role::Replica, Role::Unknown][usize::from(index % 3)]
}

fn durability(index: u8) -> Durability {
    [
        Durability::Fsync,
        Durability::NotDurable,
        Durability::Unknown,
    ][usize::from(index % 3)]
}

proptest::proptest! {
    #[test]
    fn a_recent_restart_ends_exactly_at_max_ttl(
        role_index in 0u8..3,
        durability_index in 0u8..3,
        up_ms in 0u64..100_000,
        max_ms in 1u64..100_000,
    ) {
        let probe = Probe { role: role(role_index), durability: durability(durability_index), ..Probe::default() };
        let now = Instant::now() + Duration::from_secs(200);
        let started = Some(now - Duration::from_millis(up_ms));
        let max_ttl = Duration::from_millis(max_ms);
        let refused = refusal(&probe, started, true, Some(max_ttl), now);
        let expected = if probe.role == Role::Replica {
            Some(Ineligible::Replica)
        } else if probe.durability != Durability::Fsync && up_ms < max_ms {
            Some(Ineligible::RecentRestart { uptime: Duration::from_millis(up_ms), max_ttl })
        } else {
            None
        };
        proptest::prop_assert_eq!(&refused, &expected);
        // without the rule only replicas are refused, whatever the uptime
        let off = refusal(&probe, started, false, None, now);
        proptest::prop_assert_eq!(off.is_some(), probe.role == Role::Replica);
    }
}

#[test]
fn a_reconnect_seen_at_vote_time_unverifies_until_the_next_probe() {
    let (tx, rx) = broadcast::channel(4);
    let mut health = Eligibility::new(rx);
    health.configure(Some(Duration::from_secs(1)), DEFAULT_INTERVAL);
    let durable = Probe {
        role: Role::Master,
        durability: Durability::Fsync,
        ..Probe::default()
    };
    assert_eq!(health.refusal(), Some(Ineligible::Unverified));
    let epoch = health.probe_epoch();
    health.record(durable.clone(), epoch, Instant::now());
    assert_eq!(health.refusal(), None);
    tx.send(Server::new("127.0.0.1", 1)).unwrap();
    assert_eq!(health.refusal(), Some(Ineligible::Unverified));
    // the checker task sees the same event later: counts must not double
    health.checker_saw_reconnect(1);
    let epoch = health.probe_epoch();
    health.record(durable, epoch, Instant::now());
    assert_eq!(health.refusal(), None);
}

#[test]
fn a_cluster_shard_needs_a_newer_server_and_a_new_primary_waits_the_longest_lease() {
    let (_tx, rx) = broadcast::channel(4);
    let mut shard = Eligibility::new(rx);
    shard.configure_oldest(crate::health::oldest_server::OLDEST_CLUSTER_SERVER);
    let probe = |version: &str| Probe {
        role: Role::Master,
        durability: Durability::Fsync,
        version: Some(version.into()),
        ..Probe::default()
    };
    let epoch = shard.probe_epoch();
    shard.record(probe("6.2.14"), epoch, Instant::now());
    assert_eq!(
        shard.refusal(),
        Some(Ineligible::ServerTooOld {
            version: "6.2.14".into()
        })
    );
    shard.record(probe("7.0.15"), epoch, Instant::now());
    assert_eq!(shard.refusal(), None);
    // Durable or not, a primary that just took over waits.
    shard.became_primary(Duration::from_secs(60));
    assert!(matches!(
        shard.refusal(),
        Some(Ineligible::NewPrimary { max_ttl, .. }) if max_ttl == Duration::from_secs(60)
    ));
    shard.became_primary(Duration::ZERO);
    assert_eq!(shard.refusal(), None);
}

#[test]
fn a_cluster_shards_replication_id_other_than_the_last_one_read_refuses_it() {
    let (_tx, rx) = broadcast::channel(4);
    let mut shard = Eligibility::new(rx);
    shard.configure_promotions(Duration::from_secs(60));
    let durable = Probe {
        role: Role::Master,
        durability: Durability::Fsync,
        version: Some("7.2.4".into()),
        ..Probe::default()
    };
    let epoch = shard.probe_epoch();
    shard.record(durable, epoch, Instant::now());
    let new_primary = |shard: &Eligibility| matches!(shard.refusal(), Some(Ineligible::NewPrimary { max_ttl, .. }) if max_ttl == Duration::from_secs(60));
    // The first id read, then the same again: votes count.
    assert_eq!(shard.saw_replication_id(Some("a1")), IdSeen::Same);
    assert_eq!(shard.saw_replication_id(Some("a1")), IdSeen::Same);
    assert_eq!(shard.refusal(), None);
    // Promoted since: refused for the longest lease.
    assert_eq!(
        shard.saw_replication_id(Some("b2")),
        IdSeen::Changed {
            from: "a1".into(),
            to: "b2".into()
        }
    );
    assert!(new_primary(&shard));
    // Unreadable: refused too, said once until it is read again.
    let (_tx, rx) = broadcast::channel(4);
    let mut shard = Eligibility::new(rx);
    shard.configure_promotions(Duration::from_secs(60));
    assert_eq!(
        shard.saw_replication_id(None),
        IdSeen::Unreadable { first: true }
    );
    assert!(new_primary(&shard));
    assert_eq!(
        shard.saw_replication_id(None),
        IdSeen::Unreadable { first: false }
    );
    assert_eq!(shard.saw_replication_id(Some("c3")), IdSeen::Same);
    assert_eq!(
        shard.saw_replication_id(None),
        IdSeen::Unreadable { first: true }
    );
    // A single server's id is never looked at.
    let (_tx, rx) = broadcast::channel(4);
    let single = Eligibility::new(rx);
    assert_eq!(single.saw_replication_id(None), IdSeen::Same);
}
