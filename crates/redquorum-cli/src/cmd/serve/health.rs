//! `GET /healthz`: the nodes as the lock sees them. 200 while a quorum of
//! them is up and eligible to vote, 503 otherwise, with each node's state.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

use super::Service;

#[derive(Debug, Serialize)]
pub(crate) struct Health {
    /// Whether a quorum of nodes can vote.
    ok: bool,
    quorum: usize,
    nodes: Vec<NodeState>,
}

#[derive(Debug, Serialize)]
struct NodeState {
    node: String,
    /// Up and eligible to vote.
    voting: bool,
    /// Why it is down, if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    down: Option<String>,
    /// Why it may not vote, if it may not (a replica, not durable enough).
    #[serde(skip_serializing_if = "Option::is_none")]
    refusal: Option<String>,
}

pub(crate) async fn healthz(State(service): State<Arc<Service>>) -> (StatusCode, Json<Health>) {
    let quorum = service.redlock.quorum();
    let nodes: Vec<NodeState> = (service.redlock.health().await)
        .into_iter()
        .map(|(node, health)| NodeState {
            node: node.to_string(),
            voting: health.down().is_none() && health.refusal().is_none(),
            down: health.down().map(str::to_owned),
            refusal: health.refusal().map(ToString::to_string),
        })
        .collect();
    let ok = nodes.iter().filter(|n| n.voting).count() >= quorum;
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(Health { ok, quorum, nodes }))
}
