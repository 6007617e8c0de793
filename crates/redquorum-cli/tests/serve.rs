//! `redquorum serve` on real nodes, driven over HTTP: a lock taken,
//! extended and released by its lease; a contended lock (409), a waiting
//! one granted by the holder's release, a gone hold (410, nothing
//! removed), no quorum (503); requests without a valid token (401) and bad
//! input (4xx) touch nothing; the service will not start without tokens.

mod common;

use std::time::Duration;

use common::served::{Served, TOKEN, answer, lease_of, owner_of, owners};
use common::{cluster, lock_key};
use redquorum_harness::Cluster;
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_is_taken_extended_and_released_by_its_lease() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let (status, body) = served
        .post("/v1/locks/deploy", json!({"ttl_ms": 30_000}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let lease = lease_of(&body);
    assert!(body["fence"].as_u64().unwrap() > 0, "{body}");
    let left = body["expires_in_ms"].as_u64().unwrap();
    assert!(left > 0 && left <= 30_000, "{body}");
    // Held on every node, and shown so (owner tokens never leave the service).
    for i in 0..nodes.len() {
        let exists = nodes.command(i, &["EXISTS", &lock_key("deploy")]).unwrap();
        assert_eq!(exists.as_int(), Some(1), "node {i}");
    }
    let (status, inspected) = served.get("/v1/locks/deploy").await;
    assert_eq!(status, StatusCode::OK, "{inspected}");
    assert_eq!(
        (&inspected["held"], &inspected["holders"]),
        (&json!(true), &json!(1)),
        "{inspected}"
    );
    assert!(
        !inspected.to_string().contains(&owner_of(&lease)),
        "{inspected}"
    );

    // Taken: another lock without a wait is refused.
    let (status, body) = served
        .post("/v1/locks/deploy", json!({"ttl_ms": 30_000}))
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::CONFLICT, Some("contended")),
        "{body}"
    );

    let (status, body) = served
        .post(
            "/v1/locks/deploy/extend",
            json!({"lease": lease, "ttl_ms": 60_000}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["expires_in_ms"].as_u64().unwrap() > 30_000, "{body}");
    let lease = lease_of(&body);

    let (status, body) = served
        .post("/v1/locks/deploy/release", json!({"lease": lease}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Answered once a quorum released; the last node follows.
    assert!(body["released_on"].as_u64().unwrap() >= 2, "{body}");
    assert!(
        common::eventually(Duration::from_secs(10), || owners(&nodes, "deploy")
            == [None, None, None]),
        "{:?}",
        owners(&nodes, "deploy")
    );
    let (_, inspected) = served.get("/v1/locks/deploy").await;
    assert_eq!(inspected["held"], false, "{inspected}");

    // Released: the same lease again finds nothing and removes nothing.
    let (status, body) = served
        .post("/v1/locks/deploy/release", json!({"lease": lease}))
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::GONE, Some("gone")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_lease_gets_410_and_leaves_the_next_holder_alone() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let (_, first) = served
        .post("/v1/locks/job", json!({"ttl_ms": 30_000}))
        .await;
    let stale = lease_of(&first);
    let (status, _) = served
        .post("/v1/locks/job/release", json!({"lease": stale}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, second) = served
        .post("/v1/locks/job", json!({"ttl_ms": 30_000}))
        .await;
    assert_eq!(status, StatusCode::OK, "{second}");
    let holder = owner_of(&lease_of(&second));

    let stale_calls = [
        ("/v1/locks/job/release", json!({"lease": stale})),
        (
            "/v1/locks/job/extend",
            json!({"lease": stale, "ttl_ms": 30_000}),
        ),
    ];
    for (path, body) in stale_calls {
        let (status, body) = served.post(path, body).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (StatusCode::GONE, Some("gone")),
            "{path}: {body}"
        );
    }
    // The second holder's hold is where it was.
    let (_, inspected) = served.get("/v1/locks/job").await;
    assert_eq!(inspected["held"], true, "{inspected}");
    let (status, _) = served
        .post("/v1/locks/job/release", json!({"lease": lease_of(&second)}))
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the second holder ({holder}) still held it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_lock_is_granted_once_the_holder_releases() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let (_, held) = served
        .post("/v1/locks/queue", json!({"ttl_ms": 30_000}))
        .await;
    let waiter = served.post_in_background(
        "/v1/locks/queue",
        json!({"ttl_ms": 30_000, "wait_ms": 20_000}),
    );
    // Held for 30 s: the waiter can only be granted by the release.
    let (status, _) = served
        .post("/v1/locks/queue/release", json!({"lease": lease_of(&held)}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, granted) = waiter.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{granted}");
    assert_ne!(owner_of(&lease_of(&granted)), owner_of(&lease_of(&held)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_valid_token_a_request_gets_401_and_touches_nothing() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let url = format!("{}/v1/locks/secret", served.url);
    let body = json!({"ttl_ms": 30_000});
    let http = &served.http;
    for request in [
        http.post(&url).json(&body),
        http.post(&url).json(&body).bearer_auth("wrong"),
        http.post(&url).json(&body).bearer_auth(&TOKEN[1..]),
        http.post(&url).json(&body).basic_auth("user", Some(TOKEN)),
    ] {
        let response = request.send().await.unwrap();
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let (status, body) = answer(response).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (StatusCode::UNAUTHORIZED, Some("unauthorized")),
            "{body}"
        );
    }
    assert_eq!(owners(&nodes, "secret"), vec![None, None, None]);
    let health = http
        .get(format!("{}/healthz", served.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_json_4xx_and_touches_nothing() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &["--max-ttl", "1m", "--max-wait", "5s"]);
    let a_lease = "rq1:lock:0123456789abcdef0123456789abcdef:-:1700000000000:other";
    let refused = [
        ("/v1/locks/r", json!({"ttl_ms": 0})),
        ("/v1/locks/r", json!({"ttl_ms": 60_001})),
        ("/v1/locks/r", json!({"ttl_ms": -5})),
        ("/v1/locks/r", json!({"ttl_ms": 1000, "wait_ms": 5_001})),
        ("/v1/locks/r", json!({"ttl_ms": 1000, "kind": "semaphore"})),
        ("/v1/locks/r", json!({"wait_ms": 10})),
        (
            "/v1/locks/r/extend",
            json!({"lease": "garbage", "ttl_ms": 1000}),
        ),
        ("/v1/locks/r/release", json!({"lease": a_lease})),
        ("/v1/locks/%0A/release", json!({"lease": a_lease})),
    ];
    for (path, body) in refused {
        let (status, answer) = served.post(path, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {body}: {answer}");
        assert!(
            answer["error"].is_string() && answer["message"].is_string(),
            "{answer}"
        );
    }
    let huge = json!({"ttl_ms": 1000, "pad": "x".repeat(20_000)});
    let (status, answer) = served.post("/v1/locks/r", huge).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
    let not_json = (served.http.post(format!("{}/v1/locks/r", served.url)))
        .bearer_auth(TOKEN)
        .body(r#"{"ttl_ms": 1000}"#)
        .send()
        .await
        .unwrap();
    let (status, answer) = self::answer(not_json).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, Some("not_json"))
    );
    let (status, answer) = served.get("/v1/nothing/here").await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    for i in 0..nodes.len() {
        let keys = nodes.command(i, &["DBSIZE"]).unwrap();
        assert_eq!(keys.as_int(), Some(0), "node {i} was written to");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_quorum_a_lock_gets_503_naming_the_nodes() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &["--timeout", "200ms"]);
    let (status, health) = served.get("/healthz").await;
    assert_eq!(
        (status, &health["ok"]),
        (StatusCode::OK, &json!(true)),
        "{health}"
    );
    nodes.kill(1).unwrap();
    nodes.kill(2).unwrap();
    let (status, body) = served.post("/v1/locks/r", json!({"ttl_ms": 10_000})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("unavailable")),
        "{body}"
    );
    let message = body["message"].as_str().unwrap();
    assert!(message.contains(&nodes.port(1).to_string()), "{message}");
    let lone = || {
        nodes
            .command(0, &["EXISTS", &lock_key("r")])
            .unwrap()
            .as_int()
    };
    assert!(
        common::eventually(Duration::from_secs(10), || lone() == Some(0)),
        "the lone node's hold was not unwound"
    );
}

#[test]
fn the_service_will_not_start_without_tokens_or_open_to_the_network() {
    let nodes = cluster(1);
    let refuse = |args: &[&str]| {
        let out = common::redquorum(&nodes)
            .env_remove("REDQUORUM_SERVE_TOKEN")
            .args(["serve"])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = refuse(&["--listen", "127.0.0.1:0"]);
    assert_eq!(code, Some(64), "{stderr}");
    assert!(stderr.contains("no bearer tokens"), "{stderr}");
    let (code, stderr) = refuse(&["--listen", "0.0.0.0:0", "--allow-unauthenticated-loopback"]);
    assert_eq!(code, Some(64), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_loopback_it_may_serve_without_tokens_when_told() {
    let nodes = cluster(1);
    let served = Served::start_with(&nodes, None, &["--allow-unauthenticated-loopback"]);
    let response = (served.http.post(format!("{}/v1/locks/open", served.url)))
        .json(&json!({"ttl_ms": 5_000}))
        .send()
        .await
        .unwrap();
    let (status, body) = answer(response).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_gives_up_waiting_leaves_no_acquire_behind() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    // Another client holds the lock (written as the lock script would, so
    // that only the waiter's acquires run SET on the nodes).
    for i in 0..nodes.len() {
        common::plant_holder(&nodes, i, "gate", "another", Duration::from_secs(60));
    }
    let channel = format!("redquorum:released:{}", lock_key("gate"));
    let listening = || {
        (0..nodes.len())
            .map(
                |i| match nodes.command(i, &["PUBSUB", "NUMSUB", &channel]).unwrap() {
                    redquorum_harness::Reply::Array(Some(items)) => items[1].as_int().unwrap_or(0),
                    other => panic!("NUMSUB answered {other:?}"),
                },
            )
            .sum::<i64>()
    };
    // A waiter (its request would wait 20 s) that hangs up once it waits.
    let request = (served.http.post(format!("{}/v1/locks/gate", served.url)))
        .bearer_auth(TOKEN)
        .json(&json!({"ttl_ms": 30_000, "wait_ms": 20_000}))
        .send();
    let waiter = tokio::spawn(request);
    assert!(
        common::eventually(Duration::from_secs(10), || listening() > 0),
        "the wait never subscribed to the release channel"
    );
    waiter.abort();
    // The service heard the hang-up once the wait left the channel.
    assert!(
        common::eventually(Duration::from_secs(10), || listening() == 0),
        "the wait went on after its client hung up"
    );
    // The holder lets go and says so, as a release does: a wait still under
    // way would be woken and its acquire would run SET on the nodes at once.
    let acquires = |nodes: &Cluster| (0..nodes.len()).map(|i| sets(nodes, i)).sum::<u64>();
    let before = acquires(&nodes);
    for i in 0..nodes.len() {
        nodes.command(i, &["DEL", &lock_key("gate")]).unwrap();
        nodes.command(i, &["PUBLISH", &channel, "another"]).unwrap();
    }
    assert!(
        !common::eventually(Duration::from_secs(2), || acquires(&nodes) > before),
        "an acquire reached the nodes after its client had hung up"
    );
}

/// `SET` commands node `i` ran (inside scripts too).
fn sets(nodes: &Cluster, i: usize) -> u64 {
    let info = nodes
        .command(i, &["INFO", "commandstats"])
        .unwrap()
        .as_text()
        .unwrap_or_default();
    info.lines()
        .find_map(|line| line.strip_prefix("cmdstat_set:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|calls| calls.parse().ok())
        .unwrap_or(0)
}

/// A client in Python's standard library alone (`tests/serve_client.py`,
/// as docs/serve.md shows one) takes, extends and releases a lock, is
/// refused without a token, and waits for a release.
#[test]
fn a_python_client_with_only_the_standard_library_uses_the_service() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/serve_client.py");
    let out = std::process::Command::new("python3")
        .args([script, &served.url, TOKEN, "from-python"])
        .output()
        .expect("python3 runs (tests/prepare.sh installs it)");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// With `--stop-on-stdin-end` (the torture's serve holders), the service
/// stops when the pipe its parent holds closes, as when the parent dies.
#[test]
fn with_stop_on_stdin_end_it_stops_when_stdin_closes() {
    let nodes = cluster(1);
    let mut child = common::redquorum(&nodes)
        .args(["serve", "--listen", "127.0.0.1:0", "--stop-on-stdin-end"])
        .env("REDQUORUM_SERVE_TOKEN", TOKEN)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start redquorum serve");
    let mut first = String::new();
    let stdout = child.stdout.take().expect("stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut first).unwrap();
    assert!(first.starts_with("http://"), "{first:?}");
    assert_eq!(child.try_wait().unwrap(), None, "stopped with stdin open");
    drop(child.stdin.take());
    let status = common::wait_within(&mut child, Duration::from_secs(20));
    assert!(status.success(), "{status:?}");
}
