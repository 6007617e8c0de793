//! ACL users limited to what redquorum needs (docs/operations.md, "ACL
//! user"), on plain nodes: every server of the matrix with ACL users
//! (Redis 6 and later, Valkey) runs them, TLS or not (`tests/extended.sh`).
//! `tests/tests/tls.rs` logs in such a user over TLS.

mod common;

use redquorum::{Error, NodeOutcome};
use redquorum_harness::{Cluster, Persistence};

use common::acl::{LOCKER_COMMANDS, create_user};
use common::{builder, cluster};

#[tokio::test]
async fn an_acl_user_with_only_the_documented_commands_locks_extends_and_releases() {
    let cluster = cluster(3);
    create_user(&cluster, "locker", "pw-Xy7", LOCKER_COMMANDS);
    let redlock = builder(cluster.urls_as("locker", "pw-Xy7"))
        .build()
        .unwrap();
    let mut lock = redlock.lock("acl-job").await.expect("lock as locker");
    lock.extend().await.expect("extend as locker");
    assert!(lock.release().await.unwrap() >= 2);
    // health probes are denied (INFO, CONFIG): they degrade to "unknown", never fail locking
    for (node, health) in redlock.health().await {
        assert_eq!(health.role(), redquorum::Role::Unknown, "{node}: {health}");
        assert_eq!(
            health.durability(),
            redquorum::Durability::Unknown,
            "{node}: {health}"
        );
    }
}

#[tokio::test]
async fn each_documented_command_is_needed() {
    let cluster = cluster(1);
    // EVAL is only the fallback for a script missing from the node's cache,
    // and SCRIPT LOAD fills that cache: one of the two is needed. PING is sent
    // at connect only without a password.
    let required: &[&[&str]] = &[
        &["+evalsha"],
        // the lock record, a hash: read, written, a hold removed (readers)
        &["+hgetall"],
        &["+hset"],
        &["+hdel"],
        &["+del"],
        &["+pexpire"],
        &["+pttl"],
        // fencing (on by default): the counter, and the node's clock
        &["+get"],
        &["+set"],
        &["+time"],
        &["+eval", "+script|load"],
    ];
    for (index, missing) in required.iter().enumerate() {
        let commands: Vec<&str> = LOCKER_COMMANDS
            .iter()
            .copied()
            .filter(|c| !missing.contains(c))
            .collect();
        let user = format!("user{index}");
        // every test user must start from an empty script cache
        cluster.flush_scripts(0).unwrap();
        create_user(&cluster, &user, "pw", &commands);
        let redlock = builder(cluster.urls_as(&user, "pw")).build().unwrap();
        // A lock, its token, an extension and the release; then two
        // readers, one leaving while the other stays. A hold is released
        // here whatever failed: a dropped one is released in the
        // background, whose resend of the script as EVAL could land after
        // the next user's flush and fill its cache.
        let worked = async {
            let mut lock = redlock.try_lock("needed").await.ok()?;
            let used = async {
                lock.fence().await.ok()?;
                lock.extend().await.ok()
            }
            .await;
            let released = lock.release().await.ok();
            used.and(released)?;
            let first = redlock.try_read_lock("needed").await.ok()?;
            let second = redlock.try_read_lock("needed").await;
            let first_left = first.release().await.ok();
            let second_left = second.ok()?.release().await.ok();
            first_left.and(second_left)
        }
        .await
        .is_some();
        redlock.shutdown().await;
        assert!(
            !worked,
            "lock, extend and release all worked without {missing:?}"
        );
        cluster.command(0, &["DEL", "lock:{needed}"]).unwrap();
    }
}

#[tokio::test]
async fn keys_outside_the_users_pattern_are_refused_per_node() {
    let cluster = cluster(3);
    create_user(&cluster, "locker", "pw", LOCKER_COMMANDS);
    let redlock = builder(cluster.urls_as("locker", "pw"))
        .key_prefix("other:")
        .build()
        .unwrap();
    match redlock.try_lock("job").await {
        Err(Error::Unavailable { outcomes, .. }) => {
            assert!(outcomes.failed() >= 2, "{outcomes}");
            for (node, outcome) in outcomes.iter() {
                match outcome {
                    NodeOutcome::Failed(e) => {
                        assert_eq!(e.node(), node);
                        assert!(e.source_error().details().contains("NOPERM"), "{e}");
                    }
                    // decided before this node answered
                    NodeOutcome::Unanswered => {}
                    other => panic!("{node}: expected NOPERM, got {other}"),
                }
            }
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn a_wrong_password_fails_without_showing_it() {
    let cluster = cluster(3);
    create_user(&cluster, "locker", "right-pw", LOCKER_COMMANDS);
    let redlock = builder(cluster.urls_as("locker", "wrong-pw-4711"))
        .build()
        .unwrap();
    let err = redlock.try_lock("job").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    let shown = format!("{err} {err:?} {redlock:?}");
    assert!(!shown.contains("wrong-pw-4711"), "{shown}");
}

#[tokio::test]
async fn info_and_config_get_are_enough_for_health_checks() {
    // A durable node: that its AOF fsyncs every write is read by CONFIG GET
    // (INFO says only that the AOF is on; without it, none means not durable).
    let cluster = Cluster::start_with(1, Persistence::AofAlways).expect("a durable node");
    let mut commands = LOCKER_COMMANDS.to_vec();
    commands.extend(["+info", "+config|get"]);
    create_user(&cluster, "watcher", "pw", &commands);
    let redlock = builder(cluster.urls_as("watcher", "pw")).build().unwrap();
    let health = redlock.health().await;
    assert_eq!(
        health[0].1.role(),
        redquorum::Role::Master,
        "{}",
        health[0].1
    );
    assert_eq!(
        health[0].1.durability(),
        redquorum::Durability::Fsync,
        "{}",
        health[0].1
    );
    assert_eq!(health[0].1.eviction_policy(), Some("noeviction"));
    assert!(health[0].1.uptime().is_some());
}
