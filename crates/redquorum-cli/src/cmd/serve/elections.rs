//! The election routes: leader election over HTTP, on the library's
//! elections (one leader of a name at a time, with a value and an epoch
//! that fences). A leadership is kept by a session (`sessions.rs`): it
//! lasts while the session's keepalives arrive and ends when they stop.
//!
//! - `POST /v1/elections/{name}/campaign` `{"session", "value", "ttl_ms",
//!   "wait_ms"}` → 200 `{"epoch", "expires_in_ms"}`; 409 another leads
//!   after `wait_ms` (woken by the leader's resignation).
//! - `POST /v1/elections/{name}/resign` `{"session"}` → 200
//!   `{"resigned_on"}`; 404 `not_leader` when the session does not lead it.
//! - `GET /v1/elections/{name}` → `{"leader", "epoch"}` (nulls: no leader).
//! - `GET /v1/elections/{name}/watch`: server-sent events, a `leader` event
//!   (the same JSON) now and at each change; an `error` event when a read
//!   fails (the stream goes on). Counted as a wait (`--max-waits`).
//! - `GET /v1/elections/{name}/leader-elector` → `{"name"}`: the answer of
//!   the Kubernetes leader-elector sidecar (`""`: no leader).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::{Extension, Json};
use futures::{Stream, StreamExt};
use redquorum::Leader;
use serde::{Deserialize, Serialize};

use super::auth::Client;
use super::kept::{Kept, fenced};
use super::locks::redlock_for;
use super::problem::Problem;
use super::session_routes::millis;
use super::{Service, input};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CampaignRequest {
    session: String,
    value: String,
    ttl_ms: u64,
    #[serde(default)]
    wait_ms: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct Elected {
    epoch: u64,
    expires_in_ms: u64,
}

pub(crate) async fn campaign(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(name): Path<String>,
    body: Result<Json<CampaignRequest>, JsonRejection>,
) -> Result<Json<Elected>, Problem> {
    let Json(request) = body?;
    let name = input::name(&name)?;
    let value = input::value(&request.value)?;
    let ttl = service.limits.ttl(request.ttl_ms)?;
    let wait = service.limits.wait(request.wait_ms)?;
    let session = service.sessions.get(client, &request.session)?;
    let election =
        (redlock_for(&service.redlock, ttl, wait)?.election(name)).map_err(|e| Problem::of(&e))?;
    let (once, waiting) = (
        election.try_campaign(value),
        election.campaign_waiting(value),
    );
    let leadership = service.once_or_waiting(client, wait, once, waiting).await?;
    let (leadership, epoch) = fenced(leadership, ttl).await?;
    let valid_for = (service.sessions)
        .keep(&session, Kept::Leadership(leadership))
        .await?;
    Ok(Json(Elected {
        epoch: epoch.get(),
        expires_in_ms: millis(valid_for),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResignRequest {
    session: String,
}

#[derive(Debug, Serialize)]
pub(crate) struct Resigned {
    resigned_on: usize,
}

pub(crate) async fn resign(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(name): Path<String>,
    body: Result<Json<ResignRequest>, JsonRejection>,
) -> Result<Json<Resigned>, Problem> {
    let Json(request) = body?;
    let name = input::name(&name)?;
    let session = service.sessions.get(client, &request.session)?;
    let leadership =
        (service.sessions.take_kept(&session, "leader", name, None)).ok_or_else(|| {
            Problem::new(
                StatusCode::NOT_FOUND,
                "not_leader",
                "this session does not lead this election",
            )
        })?;
    let resigned_on = leadership.release().await.map_err(|e| Problem::of(&e))?;
    Ok(Json(Resigned { resigned_on }))
}

/// Who leads: `null`s when no one does.
#[derive(Debug, Serialize)]
pub(crate) struct LeaderView {
    leader: Option<String>,
    epoch: Option<u64>,
}

impl LeaderView {
    fn of(leader: Option<&Leader>) -> Self {
        Self {
            leader: leader.map(|l| l.value().to_owned()),
            epoch: leader.and_then(Leader::epoch).map(|epoch| epoch.get()),
        }
    }
}

pub(crate) async fn leader(
    State(service): State<Arc<Service>>,
    Path(name): Path<String>,
) -> Result<Json<LeaderView>, Problem> {
    let election = (service.redlock.election(input::name(&name)?)).map_err(|e| Problem::of(&e))?;
    let leader = election.leader().await.map_err(|e| Problem::of(&e))?;
    Ok(Json(LeaderView::of(leader.as_ref())))
}

#[derive(Debug, Serialize)]
pub(crate) struct ElectorAnswer {
    name: String,
}

pub(crate) async fn leader_elector(
    State(service): State<Arc<Service>>,
    Path(name): Path<String>,
) -> Result<Json<ElectorAnswer>, Problem> {
    let election = (service.redlock.election(input::name(&name)?)).map_err(|e| Problem::of(&e))?;
    let leader = election.leader().await.map_err(|e| Problem::of(&e))?;
    Ok(Json(ElectorAnswer {
        name: leader.map(|l| l.value().to_owned()).unwrap_or_default(),
    }))
}

pub(crate) async fn watch(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(name): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Problem> {
    let election = (service.redlock.election(input::name(&name)?)).map_err(|e| Problem::of(&e))?;
    let slot = service
        .waits
        .start(client)
        .ok_or_else(Problem::too_many_waits)?;
    let events = election.observe().map(move |read| {
        // The watch counts as a wait for as long as it is streamed.
        let _slot = &slot;
        Ok(match read {
            Ok(leader) => Event::default()
                .event("leader")
                .json_data(LeaderView::of(leader.as_ref()))
                .unwrap_or_else(|e| Event::default().event("error").data(e.to_string())),
            Err(error) => Event::default().event("error").data(error.to_string()),
        })
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}
