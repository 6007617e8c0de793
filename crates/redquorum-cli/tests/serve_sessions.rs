//! `redquorum serve`'s sessions on real nodes: a session's lock outlives
//! its own TTL while keepalives come and ends when they stop (never before
//! its client's last keepalive said it may still be used); deleting a
//! session releases its locks; a session is its client's alone, and one
//! that is not there takes nothing; a replica killed mid-hold stops
//! extending, and the other replica gets the lock once it has expired.

mod common;

use std::time::{Duration, Instant};

use common::cluster;
use common::served::{Served, lease_of, owners};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// A new session of `ttl_ms`: its id.
async fn session(served: &Served, ttl_ms: u64) -> String {
    let (status, body) = served.post("/v1/sessions", json!({"ttl_ms": ttl_ms})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["session"].as_str().expect("an id").to_owned()
}

async fn keepalive(served: &Served, id: &str) -> (StatusCode, Value) {
    served
        .post(&format!("/v1/sessions/{id}/keepalive"), json!({}))
        .await
}

/// One attempt at `name` without a session: its status.
async fn try_lock(served: &Served, name: &str) -> StatusCode {
    let (status, _) = served
        .post(&format!("/v1/locks/{name}"), json!({"ttl_ms": 30_000}))
        .await;
    status
}

/// Tries `name` on `served` until granted, for `within` at most: when.
async fn granted_within(served: &Served, name: &str, within: Duration) -> Instant {
    let start = Instant::now();
    loop {
        match try_lock(served, name).await {
            StatusCode::OK => return Instant::now(),
            StatusCode::CONFLICT if start.elapsed() < within => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => panic!("{name}: {other} after {:?}", start.elapsed()),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_lock_lives_while_keepalives_come_and_ends_after_they_stop() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let id = session(&served, 3_000).await;
    // One lock shorter than the session, one longer: each is used only as
    // long as the session may last.
    for (name, ttl_ms) in [("short", 1_000), ("long", 10_000)] {
        let (status, body) = served
            .post(
                &format!("/v1/locks/{name}"),
                json!({"ttl_ms": ttl_ms, "session": id}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body["expires_in_ms"].as_u64().unwrap() <= 3_000, "{body}");
    }

    // Kept past four of the short one's TTLs by the service's extensions.
    let start = Instant::now();
    let mut believed_until = Vec::new();
    while start.elapsed() < Duration::from_secs(4) {
        let sent = Instant::now();
        let (status, body) = keepalive(&served, &id).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        believed_until = (body["locks"].as_array().unwrap().iter())
            .map(|lock| {
                assert_eq!(lock["held"], json!(true), "{body}");
                let valid_for = lock["valid_for_ms"].as_u64().unwrap();
                assert!(valid_for > 0 && valid_for <= 3_000, "{body}");
                (
                    lock["name"].as_str().unwrap().to_owned(),
                    sent + Duration::from_millis(valid_for),
                )
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(believed_until.len(), 2, "{believed_until:?}");
    assert_eq!(try_lock(&served, "short").await, StatusCode::CONFLICT);

    // Keepalives stop: the session ends, its locks are released, never
    // while its client's last keepalive still covered them.
    for (name, until) in believed_until {
        let granted = granted_within(&served, &name, Duration::from_secs(15)).await;
        assert!(
            granted >= until,
            "{name} granted {:?} before the client's last keepalive ran out",
            until - granted
        );
    }
    let (status, body) = keepalive(&served, &id).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("no_session")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_session_releases_its_locks_and_a_lease_takes_one_out() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let id = session(&served, 30_000).await;
    let mut leases = Vec::new();
    for name in ["a", "b"] {
        let (status, body) = served
            .post(
                &format!("/v1/locks/{name}"),
                json!({"ttl_ms": 30_000, "session": id}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        leases.push(lease_of(&body));
    }
    let (status, body) = served
        .post("/v1/locks/a/release", json!({"lease": leases[0]}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, body) = keepalive(&served, &id).await;
    let names: Vec<&Value> = body["locks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["name"])
        .collect();
    assert_eq!(names, [&json!("b")], "{body}");

    let (status, body) = served
        .call(Method::DELETE, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(
        (status, &body["released"]),
        (StatusCode::OK, &json!(1)),
        "{body}"
    );
    assert!(
        common::eventually(Duration::from_secs(10), || owners(&nodes, "b")
            == [None, None, None]),
        "{:?}",
        owners(&nodes, "b")
    );
    assert_eq!(keepalive(&served, &id).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_its_clients_alone_and_one_not_there_takes_nothing() {
    let nodes = cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "another-client-token\n").unwrap();
    let served = Served::start(&nodes, &["--tokens-file", tokens.to_str().unwrap()]);
    let id = session(&served, 30_000).await;
    let other = |method: Method, path: &str| {
        (served.http.request(method, format!("{}{path}", served.url)))
            .bearer_auth("another-client-token")
            .timeout(Duration::from_secs(30))
    };
    let response = other(Method::POST, &format!("/v1/sessions/{id}/keepalive"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = other(Method::POST, "/v1/locks/x")
        .json(&json!({"ttl_ms": 30_000, "session": id}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = other(Method::DELETE, &format!("/v1/sessions/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);

    for unknown in ["not-a-session", "00000000-0000-4000-8000-000000000000"] {
        let (status, body) = served
            .post("/v1/locks/x", json!({"ttl_ms": 30_000, "session": unknown}))
            .await;
        assert_eq!(
            (status, body["error"].as_str()),
            (StatusCode::NOT_FOUND, Some("no_session")),
            "{body}"
        );
    }
    assert_eq!(
        owners(&nodes, "x"),
        [None, None, None],
        "a refused lock set a key"
    );
    // The owner's session is untouched by all that.
    assert_eq!(keepalive(&served, &id).await.0, StatusCode::OK);
    let (status, _) = served.post("/v1/sessions", json!({"ttl_ms": 0})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_hold_lets_its_locks_expire_for_the_other() {
    let nodes = cluster(3);
    let (mut first, second) = (Served::start(&nodes, &[]), Served::start(&nodes, &[]));
    let id = session(&first, 60_000).await;
    let (status, body) = first
        .post("/v1/locks/job", json!({"ttl_ms": 1_000, "session": id}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Replicas on the same masters exclude each other.
    assert_eq!(try_lock(&second, "job").await, StatusCode::CONFLICT);
    let sent = Instant::now();
    let (status, body) = keepalive(&first, &id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let believed_until =
        sent + Duration::from_millis(body["locks"][0]["valid_for_ms"].as_u64().unwrap());

    first.kill();
    let killed = Instant::now();
    let granted = granted_within(&second, "job", Duration::from_secs(15)).await;
    assert!(
        granted >= believed_until,
        "granted while its client could still use it"
    );
    // Unextended, it lasted its own TTL (1 s) after the kill at most, plus
    // the retries' pace.
    assert!(
        granted - killed < Duration::from_secs(5),
        "the killed replica's lock lasted {:?}",
        granted - killed
    );
}
