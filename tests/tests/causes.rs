//! A node that cannot be used says why, by name: the error's text and its
//! per-node outcomes name the node and the cause (a refused connection, a
//! wrong password, TLS spoken to a plain-text port, a server that is not
//! Redis), never just "timed out". Real nodes.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use redquorum::{Error, NodeOutcome, Redlock};
use redquorum_harness::TlsCluster;

async fn attempt_error(urls: Vec<String>) -> Error {
    let redlock = Redlock::builder()
        .nodes(urls)
        .ttl(Duration::from_secs(5))
        .node_timeout(Duration::from_millis(250))
        .build()
        .unwrap();
    redlock.try_lock("why").await.unwrap_err()
}

/// Every failed node's outcome and the error's text name `cause`.
fn assert_names(error: &Error, cause: &str) {
    let text = error.to_string();
    assert!(
        text.to_lowercase().contains(&cause.to_lowercase()),
        "the error does not say {cause:?}: {text}"
    );
    let outcomes = error.outcomes().expect("per-node outcomes");
    // The decision comes once a quorum failed: a last node may be unanswered.
    let answered = outcomes
        .iter()
        .filter(|(_, o)| !matches!(o, NodeOutcome::Unanswered));
    for (node, outcome) in answered {
        // Failed, or, once its connection failed, known down and skipped.
        let (NodeOutcome::Failed(failure) | NodeOutcome::Down(failure)) = outcome else {
            panic!("{node}: expected a failure naming {cause:?}, got {outcome}");
        };
        let said = failure.to_string().to_lowercase();
        assert!(said.contains(&cause.to_lowercase()), "{node}: {said}");
        assert!(said.contains(&node.to_string()), "{node} not named: {said}");
    }
}

/// Three free loopback ports with nothing listening.
fn closed_ports() -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

#[tokio::test]
async fn a_refused_connection_is_named() {
    let urls = closed_ports()
        .into_iter()
        .map(|port| format!("redis://127.0.0.1:{port}"))
        .collect();
    let error = attempt_error(urls).await;
    assert!(matches!(error, Error::Unavailable { .. }), "{error:?}");
    assert_names(&error, "connection refused");
}

#[tokio::test]
async fn a_wrong_password_is_named_without_the_password() {
    let nodes = common::cluster(3);
    for i in 0..3 {
        nodes
            .command(
                i,
                &[
                    "ACL",
                    "SETUSER",
                    "locker",
                    "on",
                    ">right-Pw-91",
                    "~*",
                    "+@all",
                ],
            )
            .unwrap();
    }
    let urls = (0..3)
        .map(|i| format!("redis://locker:wrong-Pw-17@127.0.0.1:{}", nodes.port(i)))
        .collect();
    let error = attempt_error(urls).await;
    assert_names(&error, "WRONGPASS");
    assert!(!format!("{error:?}{error}").contains("wrong-Pw-17"));
}

#[tokio::test]
async fn tls_spoken_to_a_plain_text_port_is_named() {
    let nodes = common::cluster(3);
    let urls = (0..3)
        .map(|i| format!("rediss://127.0.0.1:{}", nodes.port(i)))
        .collect();
    let error = attempt_error(urls).await;
    assert_names(&error, "tls");
}

#[tokio::test]
async fn plain_text_to_a_tls_port_is_named() {
    let nodes = TlsCluster::start(3).unwrap();
    let urls = (0..3)
        .map(|i| format!("redis://127.0.0.1:{}", nodes.tls_port(i)))
        .collect();
    let error = attempt_error(urls).await;
    assert_names(&error, "use rediss://");
}

#[tokio::test]
async fn a_server_that_is_not_redis_is_named() {
    // Three listeners that answer every connection with an HTTP response.
    let mut urls = Vec::new();
    let mut servers = Vec::new();
    for _ in 0..3 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        urls.push(format!(
            "redis://127.0.0.1:{}",
            listener.local_addr().unwrap().port()
        ));
        servers.push(tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            // Bounded: the test ends after a few connections at most.
            for _ in 0..64 {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let _ = socket.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
            }
        }));
    }
    let error = attempt_error(urls).await;
    servers.iter().for_each(tokio::task::JoinHandle::abort);
    assert_names(&error, "not Redis");
}
