//! `GET /metrics`: the library's metrics (docs/observability.md) and the
//! service's own, as Prometheus text. The service's: requests by route and
//! status (`redquorum_serve_requests_total`), their time
//! (`redquorum_serve_request_seconds`), and the sessions alive
//! (`redquorum_serve_sessions`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use super::Service;

/// Requests answered, by `route` (its pattern) and `status`.
pub(crate) const REQUESTS_TOTAL: &str = "redquorum_serve_requests_total";
/// Time to answer, by `route`.
pub(crate) const REQUEST_SECONDS: &str = "redquorum_serve_request_seconds";
/// Sessions alive in this replica.
pub(crate) const SESSIONS: &str = "redquorum_serve_sessions";

/// Histogram buckets (seconds), as docs/observability.md suggests: from
/// a fast node call to a long hold.
const BUCKETS: [f64; 17] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0,
];

/// How often histograms are compacted between scrapes (the exporter asks
/// its owner to).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Installs the process's Prometheus recorder; `Err` says why not (another
/// recorder is installed).
pub(crate) fn install() -> Result<PrometheusHandle, String> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Prefix("redquorum_".into()), &BUCKETS)
        .and_then(PrometheusBuilder::install_recorder)
        .map_err(|e| e.to_string())?;
    metrics::describe_counter!(
        REQUESTS_TOTAL,
        "HTTP requests answered, by route and status"
    );
    metrics::describe_histogram!(
        REQUEST_SECONDS,
        metrics::Unit::Seconds,
        "time to answer a request, by route"
    );
    metrics::describe_gauge!(SESSIONS, "sessions alive in this replica");
    let upkeep = handle.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(UPKEEP_EVERY);
        loop {
            every.tick().await;
            upkeep.run_upkeep();
        }
    });
    Ok(handle)
}

pub(crate) async fn metrics(State(service): State<Arc<Service>>) -> Response {
    let text = service.metrics.render();
    ([(CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// The middleware: counts and times every request by its route's pattern
/// (never its path: names would make a series each).
pub(crate) async fn count(request: Request, next: Next) -> Response {
    let route = (request.extensions().get::<MatchedPath>())
        .map_or("unmatched".to_owned(), |path| path.as_str().to_owned());
    let start = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!(REQUESTS_TOTAL, "route" => route.clone(), "status" => status).increment(1);
    metrics::histogram!(REQUEST_SECONDS, "route" => route).record(start.elapsed());
    response
}
