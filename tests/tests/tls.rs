//! TLS (`rediss://`) with a private CA, and ACL users limited to what redquorum needs,
//! against real TLS-enabled redis-server nodes with certificates generated at test time.

mod common;

use std::time::Duration;

use redquorum::{BuildError, Error, NodeOutcome, Redlock};
use redquorum_harness::{TlsCluster, unrelated_ca_pem};

/// The commands a redquorum user needs (docs/operations.md, "ACL user").
const LOCKER_COMMANDS: &[&str] = &[
    "-@all",
    "+evalsha",
    "+eval",
    "+script|load",
    "+hgetall",
    "+hset",
    "+hdel",
    "+del",
    "+pexpire",
    "+pttl",
    "+get",
    "+set",
    "+time",
    "+ping",
];

fn tls_cluster(n: usize) -> TlsCluster {
    TlsCluster::start(n).unwrap_or_else(|e| panic!("cannot start {n} TLS redis nodes: {e}"))
}

fn builder(urls: Vec<String>) -> redquorum::RedlockBuilder {
    Redlock::builder()
        .nodes(urls)
        .ttl(Duration::from_secs(5))
        .node_timeout(Duration::from_millis(300))
        .wait(Duration::from_millis(500))
}

/// Creates `user` with `password` on every node, allowed `commands` on `lock:*` keys only.
fn create_user(cluster: &TlsCluster, user: &str, password: &str, commands: &[&str]) {
    let pass = format!(">{password}");
    let mut args = vec![
        "ACL",
        "SETUSER",
        user,
        "reset",
        "on",
        pass.as_str(),
        "~lock:*",
    ];
    args.extend_from_slice(commands);
    for i in 0..cluster.len() {
        cluster.command(i, &args).expect("ACL SETUSER");
    }
}

/// Whether node `index` records a hold of `owner` in the lock at `key`
/// (`None`: `owner` is any hold at all).
fn hold_on(cluster: &TlsCluster, index: usize, key: &str, owner: Option<&str>) -> bool {
    let answer = match owner {
        Some(owner) => cluster.command(index, &["HEXISTS", key, &format!("h:{owner}")]),
        None => cluster.command(index, &["EXISTS", key]),
    };
    answer.ok().and_then(|r| r.as_int()) == Some(1)
}

#[tokio::test]
async fn locks_over_tls_with_a_private_ca() {
    let cluster = tls_cluster(3);
    let redlock = builder(cluster.urls())
        .tls_root_certificate(cluster.ca_pem())
        .build()
        .unwrap();
    let lock = redlock.lock("tls-job").await.expect("lock over TLS");
    let owner = lock.owner().to_string();
    for i in 0..cluster.len() {
        assert!(hold_on(&cluster, i, lock.key(), Some(&owner)), "node {i}");
    }
    let key = lock.key().to_owned();
    assert!(lock.release().await.unwrap() >= 2);
    let gone = common::eventually(Duration::from_secs(5), || async {
        !hold_on(&cluster, 0, &key, None)
    })
    .await;
    assert!(gone, "node 0 still holds the released lock");
}

#[tokio::test]
async fn the_ca_may_be_given_as_der() {
    let cluster = tls_cluster(1);
    let pem = cluster.ca_pem();
    let base64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = decode_base64(&base64);
    let redlock = builder(cluster.urls())
        .tls_root_certificate(der)
        .build()
        .unwrap();
    redlock
        .lock("der")
        .await
        .expect("lock with a DER root")
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn nodes_signed_by_an_untrusted_ca_are_refused() {
    let cluster = tls_cluster(3);
    // the system roots (rediss:// alone) and an unrelated private CA both refuse the nodes
    let system_roots = builder(cluster.urls()).build().unwrap();
    let other_ca = builder(cluster.urls())
        .tls_root_certificate(unrelated_ca_pem().unwrap())
        .build()
        .unwrap();
    for redlock in [system_roots, other_ca] {
        match redlock.try_lock("untrusted").await {
            Err(Error::Unavailable { outcomes, .. }) => {
                // the decision comes once a quorum failed; the last node may be unanswered
                assert!(outcomes.failed() >= 2, "{outcomes}");
                assert_eq!(outcomes.acquired() + outcomes.taken(), 0, "{outcomes}");
            }
            other => panic!("expected unavailable, got {other:?}"),
        }
    }
    assert!(!hold_on(&cluster, 0, "lock:{untrusted}", None));
}

#[tokio::test]
async fn plain_text_to_a_tls_port_does_not_lock() {
    let cluster = tls_cluster(1);
    let plain = cluster.url(0).replacen("rediss://", "redis://", 1);
    let redlock = builder(vec![plain]).build().unwrap();
    assert!(matches!(
        redlock.try_lock("plain").await,
        Err(Error::Unavailable { .. })
    ));
}

#[tokio::test]
async fn garbage_root_certificate_is_a_build_error() {
    let err = builder(vec!["rediss://127.0.0.1:6380".into()])
        .tls_root_certificate("-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n")
        .build()
        .unwrap_err();
    assert!(
        matches!(err, BuildError::InvalidTlsRootCertificate { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_acl_user_with_only_the_documented_commands_locks_extends_and_releases() {
    let cluster = tls_cluster(3);
    create_user(&cluster, "locker", "pw-Xy7", LOCKER_COMMANDS);
    let redlock = builder(cluster.urls_as("locker", "pw-Xy7"))
        .tls_root_certificate(cluster.ca_pem())
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
    let cluster = tls_cluster(1);
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
        cluster.command(0, &["SCRIPT", "FLUSH"]).unwrap();
        create_user(&cluster, &user, "pw", &commands);
        let redlock = builder(cluster.urls_as(&user, "pw"))
            .tls_root_certificate(cluster.ca_pem())
            .build()
            .unwrap();
        // A lock, its token, an extension and the release; then two
        // readers, one leaving while the other stays.
        let worked = async {
            let mut lock = redlock.try_lock("needed").await.ok()?;
            lock.fence().await.ok()?;
            lock.extend().await.ok()?;
            lock.release().await.ok()?;
            let first = redlock.try_read_lock("needed").await.ok()?;
            let second = redlock.try_read_lock("needed").await.ok()?;
            first.release().await.ok()?;
            second.release().await.ok()
        }
        .await
        .is_some();
        assert!(
            !worked,
            "lock, extend and release all worked without {missing:?}"
        );
        cluster.command(0, &["DEL", "lock:{needed}"]).unwrap();
    }
}

#[tokio::test]
async fn keys_outside_the_users_pattern_are_refused_per_node() {
    let cluster = tls_cluster(3);
    create_user(&cluster, "locker", "pw", LOCKER_COMMANDS);
    let redlock = builder(cluster.urls_as("locker", "pw"))
        .tls_root_certificate(cluster.ca_pem())
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
    let cluster = tls_cluster(3);
    create_user(&cluster, "locker", "right-pw", LOCKER_COMMANDS);
    let redlock = builder(cluster.urls_as("locker", "wrong-pw-4711"))
        .tls_root_certificate(cluster.ca_pem())
        .build()
        .unwrap();
    let err = redlock.try_lock("job").await.unwrap_err();
    assert!(matches!(err, Error::Unavailable { .. }), "{err:?}");
    let shown = format!("{err} {err:?} {redlock:?}");
    assert!(!shown.contains("wrong-pw-4711"), "{shown}");
}

/// Standard base64 (the PEM body) to bytes.
fn decode_base64(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let (mut buffer, mut bits) = (0u32, 0);
    for byte in text.bytes().filter(|b| *b != b'=') {
        let value = ALPHABET.iter().position(|c| *c == byte).expect("base64") as u32;
        buffer = (buffer << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    out
}

#[tokio::test]
async fn info_and_config_get_are_enough_for_health_checks() {
    let cluster = tls_cluster(1);
    let mut commands = LOCKER_COMMANDS.to_vec();
    commands.extend(["+info", "+config|get"]);
    create_user(&cluster, "watcher", "pw", &commands);
    let redlock = builder(cluster.urls_as("watcher", "pw"))
        .tls_root_certificate(cluster.ca_pem())
        .build()
        .unwrap();
    let health = redlock.health().await;
    assert_eq!(
        health[0].1.role(),
        redquorum::Role::Master,
        "{}",
        health[0].1
    );
    assert_eq!(
        health[0].1.durability(),
        redquorum::Durability::NotDurable,
        "{}",
        health[0].1
    );
    assert_eq!(health[0].1.eviction_policy(), Some("noeviction"));
    assert!(health[0].1.uptime().is_some());
}
