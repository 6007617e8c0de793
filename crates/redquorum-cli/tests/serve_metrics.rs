//! `redquorum serve`'s metrics, its OpenAPI document and its cap on waits,
//! on real nodes: `/metrics` shows the service's requests by route and
//! status, its sessions and the library's own metrics, and needs the token;
//! every route the served OpenAPI document names is served; a client at
//! `--max-waits` gets 429 for one more wait (a watch counts too), and may
//! wait again once one ends.

mod common;

use std::time::Duration;

use common::cluster;
use common::served::{Served, TOKEN, lease_of};
use reqwest::StatusCode;
use serde_json::json;

async fn metrics(served: &Served) -> String {
    let response = (served.http.get(format!("{}/metrics", served.url)))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(kind.starts_with("text/plain"), "{kind}");
    response.text().await.unwrap()
}

/// The value of the sample `series` (name and labels, as rendered).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_by_route_and_show_the_librarys() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    for _ in 0..2 {
        let (status, body) = served.post("/v1/locks/m", json!({"ttl_ms": 30_000})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, _) = served
            .post("/v1/locks/m/release", json!({"lease": lease_of(&body)}))
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let (status, _) = served.post("/v1/sessions", json!({"ttl_ms": 60_000})).await;
    assert_eq!(status, StatusCode::CREATED);
    let text = metrics(&served).await;
    let locks = r#"redquorum_serve_requests_total{route="/v1/locks/{name}",status="200"}"#;
    assert_eq!(sample(&text, locks), Some(2.0), "{text}");
    assert_eq!(
        sample(&text, "redquorum_serve_sessions"),
        Some(1.0),
        "{text}"
    );
    assert!(text.contains("redquorum_acquire_total{"), "{text}");
    // Histograms with buckets, which histogram_quantile needs.
    assert!(
        text.contains("redquorum_serve_request_seconds_bucket{"),
        "{text}"
    );
    assert!(text.contains("redquorum_acquire_seconds_bucket{"), "{text}");

    let anonymous = served
        .http
        .get(format!("{}/metrics", served.url))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let refused = r#"redquorum_serve_requests_total{route="/metrics",status="401"}"#;
    assert_eq!(sample(&metrics(&served).await, refused), Some(1.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_at_its_cap_of_waits_gets_429_until_one_ends() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &["--max-waits", "1"]);
    let (status, held) = served.post("/v1/locks/w", json!({"ttl_ms": 30_000})).await;
    assert_eq!(status, StatusCode::OK, "{held}");
    // One wait under way: a watch (it streams until dropped).
    let watch = (served
        .http
        .get(format!("{}/v1/elections/other/watch", served.url)))
    .bearer_auth(TOKEN)
    .send()
    .await
    .unwrap();
    assert_eq!(watch.status(), StatusCode::OK);
    let (status, body) = served
        .post("/v1/locks/w", json!({"ttl_ms": 30_000, "wait_ms": 10_000}))
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::TOO_MANY_REQUESTS, Some("too_many_waits")),
        "{body}"
    );
    // One attempt without a wait is not a wait.
    let (status, _) = served.post("/v1/locks/w", json!({"ttl_ms": 30_000})).await;
    assert_eq!(status, StatusCode::CONFLICT);

    // The watch ends (the client hangs up): the wait is free again.
    drop(watch);
    let start = std::time::Instant::now();
    let (status, body) = loop {
        let (status, body) = served
            .post("/v1/locks/w", json!({"ttl_ms": 30_000, "wait_ms": 100}))
            .await;
        if status != StatusCode::TOO_MANY_REQUESTS || start.elapsed() > Duration::from_secs(10) {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::CONFLICT, Some("contended")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_the_served_openapi_document_names_is_served() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let (status, document) = served.get("/v1/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(document["openapi"], json!("3.1.0"));
    let paths = document["paths"].as_object().expect("paths");
    assert!(paths.len() > 10, "{document}");
    for (path, methods) in paths {
        let concrete = (path.replace("{name}", "probe"))
            .replace("{id}", "00000000-0000-4000-8000-000000000000");
        for method in methods.as_object().expect("methods").keys() {
            let method: reqwest::Method = method.to_uppercase().parse().unwrap();
            let response = (served
                .http
                .request(method.clone(), format!("{}{concrete}", served.url)))
            .bearer_auth(TOKEN)
            .json(&json!({}))
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .unwrap();
            let status = response.status();
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            if status == StatusCode::NOT_FOUND {
                let body: serde_json::Value = response.json().await.unwrap();
                assert_ne!(
                    body["error"],
                    json!("not_found"),
                    "{method} {path} is not served"
                );
            }
        }
    }
}
