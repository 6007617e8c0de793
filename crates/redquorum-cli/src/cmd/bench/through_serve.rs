//! `redquorum bench --serve`: the workload through `redquorum serve` over
//! HTTP, beside the library on the same nodes. Three lockers, one run
//! each: the library as a user gets it (no token asked), the library
//! asking each grant's fencing token (what the service does for every
//! lock it hands out), and an HTTP client of a service this command
//! starts (its defaults, on loopback; one keep-alive connection per
//! concurrent task), which asks `POST /v1/locks/{name}` and releases by
//! the lease.

use std::time::{Duration, Instant};

use redquorum::{Lock, Redlock};
use redquorum_benches::{Grant, Locker, Refusal};
use serde::Deserialize;
use serde_json::json;

use crate::serve_child::ServeChild;

/// The library, asking every grant's fencing token.
#[derive(Debug)]
pub(crate) struct TokenEveryGrant(pub(crate) Redlock);

impl Locker for TokenEveryGrant {
    type Held = Lock;

    async fn acquire(&self, resource: &str) -> Result<Grant<Lock>, Refusal> {
        let other = |e: redquorum::Error| Refusal::new("other", e.to_string());
        let lock = self.0.lock(resource).await.map_err(other)?;
        let fence = lock.fence().await.map_err(other)?;
        let (owner, deadline) = (lock.owner().to_string(), lock.deadline());
        Ok(Grant::new(lock, owner, deadline).with_fence(Some(fence.get())))
    }

    async fn release(&self, held: Lock) -> Result<(), String> {
        held.release().await.map(drop).map_err(|e| e.to_string())
    }
}

/// A client of `redquorum serve`, taking plain locks over HTTP.
#[derive(Debug)]
pub(crate) struct OverHttp {
    service: ServeChild,
    http: reqwest::Client,
    ttl: Duration,
    wait: Duration,
}

/// A lock the service granted.
#[derive(Debug, Deserialize)]
struct Granted {
    lease: String,
    fence: u64,
}

impl OverHttp {
    /// Starts a service on `urls` for locks of `ttl`, waited for up to `wait`.
    pub(crate) fn start(urls: &[String], ttl: Duration, wait: Duration) -> Result<Self, String> {
        Ok(Self {
            service: ServeChild::start(urls, &[], |_| {})?,
            http: reqwest::Client::new(),
            ttl,
            wait,
        })
    }

    async fn post(&self, path: &str, body: serde_json::Value) -> Result<reqwest::Response, String> {
        let url = format!("{}{path}", self.service.url);
        let response = (self.http.post(url).json(&body).send().await).map_err(|e| e.to_string())?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        Err(format!(
            "{status}: {}",
            response.text().await.unwrap_or_default()
        ))
    }
}

impl Locker for OverHttp {
    /// The resource and its lease.
    type Held = (String, String);

    async fn acquire(&self, resource: &str) -> Result<Grant<Self::Held>, Refusal> {
        let sent = Instant::now();
        let body = json!({"ttl_ms": self.ttl.as_millis(), "wait_ms": self.wait.as_millis()});
        let response = (self.post(&format!("/v1/locks/{resource}"), body).await)
            .map_err(|e| Refusal::new("other", e))?;
        let granted: Granted =
            (response.json().await).map_err(|e| Refusal::new("other", e.to_string()))?;
        let held = (resource.to_owned(), granted.lease);
        Ok(Grant::new(held, String::new(), sent + self.ttl).with_fence(Some(granted.fence)))
    }

    async fn release(&self, (resource, lease): Self::Held) -> Result<(), String> {
        let path = format!("/v1/locks/{resource}/release");
        self.post(&path, json!({"lease": lease})).await.map(drop)
    }
}
