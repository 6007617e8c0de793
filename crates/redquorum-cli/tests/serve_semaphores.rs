//! `redquorum serve`'s semaphores on real nodes: permits in sessions, each
//! in its own slot with its own fencing token, no more than the semaphore
//! has; a waiter woken by a release; a permit freed when its session's
//! keepalives stop; bad input and wrong permits refused, nothing taken.

mod common;

use std::time::{Duration, Instant};

use common::cluster;
use common::served::Served;
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn session(served: &Served, ttl_ms: u64) -> String {
    let (status, body) = served.post("/v1/sessions", json!({"ttl_ms": ttl_ms})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["session"].as_str().expect("an id").to_owned()
}

async fn acquire(served: &Served, session: &str, wait_ms: u64) -> (StatusCode, Value) {
    let body = json!({"session": session, "permits": 2, "ttl_ms": 2_000, "wait_ms": wait_ms});
    served.post("/v1/semaphores/pool/acquire", body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_grants_its_permits_and_no_more_and_wakes_a_waiter_on_release() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let (a, b, c) = (
        session(&served, 30_000).await,
        session(&served, 30_000).await,
        session(&served, 30_000).await,
    );
    let (status, first) = acquire(&served, &a, 0).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (status, second) = acquire(&served, &b, 0).await;
    assert_eq!(status, StatusCode::OK, "{second}");
    assert_ne!(first["slot"], second["slot"], "{first} {second}");
    assert_ne!(first["fence"], second["fence"], "{first} {second}");
    let (status, body) = acquire(&served, &c, 0).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::CONFLICT, Some("contended")),
        "{body}"
    );

    // The keepalive lists the permit by id and slot.
    let (_, kept) = served
        .post(&format!("/v1/sessions/{a}/keepalive"), json!({}))
        .await;
    let listed = &kept["locks"][0];
    assert_eq!(
        (&listed["kind"], &listed["permit"], &listed["slot"]),
        (&json!("permit"), &first["permit"], &first["slot"]),
        "{kept}"
    );

    // A permit of another session, or of another semaphore, is not this one's.
    let wrong = json!({"session": a, "permit": second["permit"]});
    let (status, body) = served.post("/v1/semaphores/pool/release", wrong).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("no_permit")),
        "{body}"
    );

    // C waits; B releases; C is granted B's slot.
    let body = json!({"session": c, "permits": 2, "ttl_ms": 2_000, "wait_ms": 30_000});
    let waiter = served.post_in_background("/v1/semaphores/pool/acquire", body);
    let release = json!({"session": b, "permit": second["permit"]});
    let (status, body) = served.post("/v1/semaphores/pool/release", release).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, third) = waiter.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{third}");
    assert_eq!(third["slot"], second["slot"], "{third}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_is_freed_when_its_sessions_keepalives_stop_and_bad_asks_take_nothing() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let (short, other) = (
        session(&served, 1_500).await,
        session(&served, 60_000).await,
    );
    for (body, status) in [
        (
            json!({"session": other, "permits": 0, "ttl_ms": 2_000}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"session": other, "permits": 1, "ttl_ms": 0}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"session": "nope", "permits": 1, "ttl_ms": 2_000}),
            StatusCode::NOT_FOUND,
        ),
        (
            json!({"permits": 1, "ttl_ms": 2_000}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (got, answer) = served
            .post("/v1/semaphores/one/acquire", body.clone())
            .await;
        assert_eq!(got, status, "{body}: {answer}");
    }
    let keys = |i| nodes.command(i, &["DBSIZE"]).unwrap().as_int();
    assert_eq!(
        (0..3).map(keys).collect::<Vec<_>>(),
        [Some(0); 3],
        "a refused ask wrote"
    );

    let ask = |session: &str| json!({"session": session, "permits": 1, "ttl_ms": 2_000});
    let (status, body) = served.post("/v1/semaphores/one/acquire", ask(&short)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = served.post("/v1/semaphores/one/acquire", ask(&other)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    // No keepalive for the short session: its permit is released once it ends.
    let start = Instant::now();
    loop {
        let (status, body) = served.post("/v1/semaphores/one/acquire", ask(&other)).await;
        if status == StatusCode::OK {
            break;
        }
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the permit was never freed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
