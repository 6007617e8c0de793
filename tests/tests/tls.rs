//! TLS (`rediss://`) with a private CA, against real TLS-enabled redis-server
//! nodes with certificates generated at test time; and one ACL user logging
//! in over TLS (the ACL tests themselves run on plain nodes,
//! `tests/tests/acl.rs`, so that servers built without TLS run them too).

mod common;

use std::time::Duration;

use redquorum::{BuildError, Error};
use redquorum_harness::{TlsCluster, unrelated_ca_pem};

use common::acl::{LOCKER_COMMANDS, create_user};
use common::builder;

fn tls_cluster(n: usize) -> TlsCluster {
    TlsCluster::start(n).unwrap_or_else(|e| panic!("cannot start {n} TLS redis nodes: {e}"))
}

/// Whether node `index` records a hold of `owner` in the lock at `key`
/// (`None`: `owner` is any hold at all).
/// Whether node `index` has `owner`'s hold at `key` (a plain hold's string,
/// or its field in a lock record), or with `None` any record there.
fn hold_on(cluster: &TlsCluster, index: usize, key: &str, owner: Option<&str>) -> bool {
    let Some(owner) = owner else {
        let exists = cluster.command(index, &["EXISTS", key]);
        return exists.ok().and_then(|r| r.as_int()) == Some(1);
    };
    let plain = cluster.command(index, &["GET", key]).ok();
    if plain.and_then(|r| r.as_text()).as_deref() == Some(owner) {
        return true;
    }
    let field = cluster.command(index, &["HEXISTS", key, &format!("h:{owner}")]);
    field.ok().and_then(|r| r.as_int()) == Some(1)
}

/// Waits until every node holds `owner`'s lock at `key`: the lock returns
/// once a quorum answered, and the last node's write may be on its way.
async fn held_everywhere(cluster: &TlsCluster, key: &str, owner: &str) {
    let everywhere = common::eventually(Duration::from_secs(5), || async {
        (0..cluster.len()).all(|i| hold_on(cluster, i, key, Some(owner)))
    })
    .await;
    let on: Vec<bool> = (0..cluster.len())
        .map(|i| hold_on(cluster, i, key, Some(owner)))
        .collect();
    assert!(everywhere, "not held on every node: {on:?}");
}

#[tokio::test]
async fn locks_over_tls_with_a_private_ca() {
    let cluster = tls_cluster(3);
    let redlock = builder(cluster.urls())
        .tls_root_certificate(cluster.ca_pem())
        .build()
        .unwrap();
    let lock = redlock.lock("tls-job").await.expect("lock over TLS");
    held_everywhere(&cluster, lock.key(), &lock.owner().to_string()).await;
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
async fn an_acl_user_with_only_the_documented_commands_locks_over_tls() {
    let cluster = tls_cluster(3);
    create_user(&cluster, "locker", "pw-Xy7", LOCKER_COMMANDS);
    let redlock = builder(cluster.urls_as("locker", "pw-Xy7"))
        .tls_root_certificate(cluster.ca_pem())
        .build()
        .unwrap();
    let mut lock = redlock.lock("acl-job").await.expect("lock as locker");
    held_everywhere(&cluster, lock.key(), &lock.owner().to_string()).await;
    lock.extend().await.expect("extend as locker");
    assert!(lock.release().await.unwrap() >= 2);
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
