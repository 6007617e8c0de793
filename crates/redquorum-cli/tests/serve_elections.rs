//! `redquorum serve`'s elections on real nodes: a leader won in a session,
//! read (also as the Kubernetes leader-elector answers) and watched over
//! server-sent events; a contender refused, then woken by the resignation
//! and given a greater epoch; a leader deposed when its session's
//! keepalives stop; campaigns with bad input or no session touch nothing.

mod common;

use std::time::{Duration, Instant};

use common::cluster;
use common::served::{Served, TOKEN};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A new session of `ttl_ms`: its id.
async fn session(served: &Served, ttl_ms: u64) -> String {
    let (status, body) = served.post("/v1/sessions", json!({"ttl_ms": ttl_ms})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["session"].as_str().expect("an id").to_owned()
}

/// `session` campaigns for `name` with `value`.
async fn campaign(
    served: &Served,
    name: &str,
    session: &str,
    value: &str,
    wait_ms: u64,
) -> (StatusCode, Value) {
    let body = json!({"session": session, "value": value, "ttl_ms": 2_000, "wait_ms": wait_ms});
    served
        .post(&format!("/v1/elections/{name}/campaign"), body)
        .await
}

/// An election's watch: its server-sent events, read as they come.
struct Watch {
    response: reqwest::Response,
    buffer: String,
}

impl Watch {
    async fn open(served: &Served, name: &str) -> Self {
        let response = (served
            .http
            .get(format!("{}/v1/elections/{name}/watch", served.url)))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("the watch answers");
        assert_eq!(response.status(), StatusCode::OK);
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(kind.starts_with("text/event-stream"), "{kind}");
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next `leader` event's leader (`null`: none), within 15 s.
    async fn next_leader(&mut self) -> Value {
        let read = async {
            loop {
                while let Some(end) = self.buffer.find("\n\n") {
                    let event: String = self.buffer.drain(..end + 2).collect();
                    let data = event.lines().find_map(|line| line.strip_prefix("data:"));
                    if event.lines().any(|line| line == "event: leader") {
                        let view: Value = serde_json::from_str(data.unwrap().trim()).unwrap();
                        return view["leader"].clone();
                    }
                }
                let chunk = self
                    .response
                    .chunk()
                    .await
                    .expect("the stream")
                    .expect("not ended");
                self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
            }
        };
        tokio::time::timeout(Duration::from_secs(15), read)
            .await
            .expect("a leader event within 15 s")
    }

    /// Reads events until one names `value` (others, e.g. no leader in
    /// between, are passed over).
    async fn until_leader(&mut self, value: &str) {
        while self.next_leader().await != json!(value) {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_is_watched_over_sse_and_the_next_is_woken_by_its_resignation() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let mut watch = Watch::open(&served, "scheduler").await;
    assert_eq!(watch.next_leader().await, Value::Null, "no leader yet");

    let (first, second) = (
        session(&served, 30_000).await,
        session(&served, 30_000).await,
    );
    let (status, won) = campaign(&served, "scheduler", &first, "10.0.0.1", 0).await;
    assert_eq!(status, StatusCode::OK, "{won}");
    let first_epoch = won["epoch"].as_u64().unwrap();
    assert!(first_epoch > 0, "{won}");
    watch.until_leader("10.0.0.1").await;
    let (status, read) = served.get("/v1/elections/scheduler").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(read, json!({"leader": "10.0.0.1", "epoch": first_epoch}));
    let (_, elector) = served.get("/v1/elections/scheduler/leader-elector").await;
    assert_eq!(elector, json!({"name": "10.0.0.1"}));

    let (status, body) = campaign(&served, "scheduler", &second, "10.0.0.2", 0).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::CONFLICT, Some("contended")),
        "{body}"
    );

    // The second waits; the first resigns; the second is woken and leads
    // with a greater epoch.
    let body = json!({"session": second, "value": "10.0.0.2", "ttl_ms": 2_000, "wait_ms": 30_000});
    let waiting = served.post_in_background("/v1/elections/scheduler/campaign", body);
    let (status, body) = served
        .post("/v1/elections/scheduler/resign", json!({"session": first}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, won) = waiting.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{won}");
    assert!(won["epoch"].as_u64().unwrap() > first_epoch, "{won}");
    watch.until_leader("10.0.0.2").await;

    // The first no longer leads: nothing to resign.
    let (status, body) = served
        .post("/v1/elections/scheduler/resign", json!({"session": first}))
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_leader")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_keepalives_stop_is_deposed_and_bad_campaigns_touch_nothing() {
    let nodes = cluster(3);
    let served = Served::start(&nodes, &[]);
    let id = session(&served, 1_500).await;
    for (body, status) in [
        (
            json!({"value": "v", "ttl_ms": 2_000}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"session": "nope", "value": "v", "ttl_ms": 2_000}),
            StatusCode::NOT_FOUND,
        ),
        (
            json!({"session": id, "value": "", "ttl_ms": 2_000}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"session": id, "value": "a\nb", "ttl_ms": 2_000}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"session": id, "value": "v", "ttl_ms": 0}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let (got, answer) = served
            .post("/v1/elections/jobs/campaign", body.clone())
            .await;
        assert_eq!(got, status, "{body}: {answer}");
    }
    let (_, read) = served.get("/v1/elections/jobs").await;
    assert_eq!(
        read,
        json!({"leader": null, "epoch": null}),
        "a refused campaign took the lead"
    );

    let (status, won) = campaign(&served, "jobs", &id, "worker-7", 0).await;
    assert_eq!(status, StatusCode::OK, "{won}");
    // No keepalive: the session ends within its TTL, and its leader with it.
    let start = Instant::now();
    loop {
        let (_, read) = served.get("/v1/elections/jobs").await;
        if read["leader"].is_null() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "still leading: {read}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, _) = served
        .post(&format!("/v1/sessions/{id}/keepalive"), json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
