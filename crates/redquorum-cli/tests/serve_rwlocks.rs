//! `redquorum serve`'s read-write locks on real nodes: readers share a
//! name, a writer and a plain lock are refused meanwhile; a waiting writer
//! is granted once the last reader releases, with a greater fencing
//! token; a write lease is extended and released on the lock routes, a
//! stale one gets 410 and leaves the next holder alone; a reader whose
//! session's keepalives stop lets a writer in; bad input takes nothing.

mod common;

use std::time::{Duration, Instant};

use common::served::{Served, lease_of};
use common::{cluster, lock_key};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn session(served: &Served, ttl_ms: u64) -> String {
    let (status, body) = served.post("/v1/sessions", json!({"ttl_ms": ttl_ms})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["session"].as_str().expect("an id").to_owned()
}

async fn read(served: &Served, session: &str, ttl_ms: u64) -> (StatusCode, Value) {
    let body = json!({"session": session, "ttl_ms": ttl_ms});
    served.post("/v1/rwlocks/prices/read", body).await
}

fn refused(status: StatusCode, body: &Value, code: StatusCode, error: &str) {
    assert_eq!(
        (status, body["error"].as_str()),
        (code, Some(error)),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_a_name_and_a_writer_is_granted_after_the_last() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let (a, b) = (
        session(&served, 30_000).await,
        session(&served, 30_000).await,
    );
    let (status, first) = read(&served, &a, 30_000).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (status, second) = read(&served, &b, 30_000).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_ne!(first["read"], second["read"]);
    let (_, inspected) = served.get("/v1/locks/prices").await;
    assert_eq!(
        (&inspected["kind"], &inspected["holders"]),
        (&json!("read"), &json!(2)),
        "{inspected}"
    );

    // Readers hold it: neither a writer nor a plain lock gets it.
    let (status, body) = served
        .post("/v1/rwlocks/prices/write", json!({"ttl_ms": 30_000}))
        .await;
    refused(status, &body, StatusCode::CONFLICT, "contended");
    let (status, body) = served
        .post("/v1/locks/prices", json!({"ttl_ms": 30_000}))
        .await;
    refused(status, &body, StatusCode::CONFLICT, "contended");

    // A writer waits; held 30 s, only the readers' releases can let it in.
    let writer = served.post_in_background(
        "/v1/rwlocks/prices/write",
        json!({"ttl_ms": 30_000, "wait_ms": 20_000}),
    );
    for (session, held) in [(&a, &first), (&b, &second)] {
        let (status, body) = served
            .post(
                "/v1/rwlocks/prices/read/release",
                json!({"session": session, "read": held["read"]}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, written) = writer.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{written}");
    let lease = lease_of(&written);
    assert!(lease.starts_with("rq1:write:"), "{lease}");
    let readers_highest = first["fence"].as_u64().max(second["fence"].as_u64());
    assert!(written["fence"].as_u64() > readers_highest, "{written}");

    // Held by the writer: a reader is refused.
    let (status, body) = read(&served, &a, 30_000).await;
    refused(status, &body, StatusCode::CONFLICT, "contended");

    // The write lease extends and releases on the lock routes.
    let (status, extended) = served
        .post(
            "/v1/locks/prices/extend",
            json!({"lease": lease, "ttl_ms": 60_000}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{extended}");
    assert!(
        extended["expires_in_ms"].as_u64().unwrap() > 30_000,
        "{extended}"
    );
    let lease = lease_of(&extended);
    let (status, body) = served
        .post("/v1/locks/prices/release", json!({"lease": lease}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Released: a reader gets it again, and the stale write lease neither
    // extends nor releases it.
    let (status, again) = read(&served, &b, 30_000).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    for (path, body) in [
        ("/v1/locks/prices/release", json!({"lease": lease})),
        (
            "/v1/locks/prices/extend",
            json!({"lease": lease, "ttl_ms": 30_000}),
        ),
    ] {
        let (status, body) = served.post(path, body).await;
        refused(status, &body, StatusCode::GONE, "gone");
    }
    let (_, inspected) = served.get("/v1/locks/prices").await;
    assert_eq!(
        (&inspected["kind"], &inspected["holders"]),
        (&json!("read"), &json!(1)),
        "{inspected}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_whose_keepalives_stop_lets_a_writer_in() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    // The session ends 1 s after the service made it, which is after this.
    let asked = Instant::now();
    let quiet = session(&served, 1_000).await;
    let (status, body) = read(&served, &quiet, 1_000).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = served
        .post(
            "/v1/rwlocks/prices/write",
            json!({"ttl_ms": 30_000, "wait_ms": 15_000}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Not before the session's TTL ran out (no keepalive came).
    assert!(
        asked.elapsed() >= Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_read_write_requests_take_nothing() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let a = session(&served, 30_000).await;
    let other = session(&served, 30_000).await;
    let (_, held) = read(&served, &a, 30_000).await;
    let bad = [
        // A reader is kept by a session: none named, or one not there.
        ("/v1/rwlocks/fresh/read", json!({"ttl_ms": 1_000})),
        (
            "/v1/rwlocks/fresh/read",
            json!({"session": "00000000-0000-4000-8000-000000000000", "ttl_ms": 1_000}),
        ),
        ("/v1/rwlocks/fresh/read", json!({"session": a, "ttl_ms": 0})),
        ("/v1/rwlocks/fresh/write", json!({"ttl_ms": 0})),
        (
            "/v1/rwlocks/fresh/write",
            json!({"ttl_ms": 1_000, "kind": "x"}),
        ),
    ];
    for (path, body) in bad {
        let (status, answer) = served.post(path, body.clone()).await;
        assert!(status.is_client_error(), "{path} {body}: {status} {answer}");
    }
    for i in 0..nodes.len() {
        let exists = nodes.command(i, &["EXISTS", &lock_key("fresh")]).unwrap();
        assert_eq!(exists.as_int(), Some(0), "node {i}");
    }
    // Another session's reader, or a reader of another name, is not this one's.
    for (session, path) in [
        (&other, "/v1/rwlocks/prices/read/release"),
        (&a, "/v1/rwlocks/fresh/read/release"),
    ] {
        let (status, body) = served
            .post(path, json!({"session": session, "read": held["read"]}))
            .await;
        refused(status, &body, StatusCode::NOT_FOUND, "no_read");
    }
    let (_, inspected) = served.get("/v1/locks/prices").await;
    assert_eq!(inspected["holders"], 1, "{inspected}");
}
