//! The session routes (`sessions.rs` keeps them):
//!
//! - `POST /v1/sessions` `{"ttl_ms"}` → 201 `{"session", "ttl_ms",
//!   "expires_in_ms"}`.
//! - `POST /v1/sessions/{id}/keepalive` → 200 `{"expires_in_ms", "locks":
//!   [{"name", "kind", "lease" | "permit" and "slot", "held", "valid_for_ms"}]}`: the session lives a TTL
//!   from now; each lock is held for `valid_for_ms` from when the
//!   keepalive was sent, at most (a lost one is listed once, `held: false`).
//! - `DELETE /v1/sessions/{id}` → 200 `{"released"}`: its locks released.
//!
//! A session is its client's (its bearer token's): another client's
//! request, like one for a session that ended, gets 404.

use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};

use super::Service;
use super::auth::Client;
use super::problem::Problem;
use super::sessions::Held;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SessionRequest {
    ttl_ms: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct Created {
    session: String,
    ttl_ms: u64,
    expires_in_ms: u64,
}

pub(crate) async fn create(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    body: Result<Json<SessionRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<Created>), Problem> {
    let Json(request) = body?;
    let ttl = service.limits.ttl(request.ttl_ms)?;
    let session = service.sessions.create(client, ttl)?;
    Ok((
        StatusCode::CREATED,
        Json(Created {
            session: session.id.to_string(),
            ttl_ms: request.ttl_ms,
            expires_in_ms: millis(session.left()),
        }),
    ))
}

#[derive(Debug, Serialize)]
pub(crate) struct KeptAlive {
    expires_in_ms: u64,
    locks: Vec<SessionLock>,
}

#[derive(Debug, Serialize)]
pub(crate) struct SessionLock {
    name: String,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease: Option<String>,
    /// A permit's id and slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    permit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    slot: Option<usize>,
    held: bool,
    valid_for_ms: u64,
}

pub(crate) async fn keepalive(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(id): Path<String>,
) -> Result<Json<KeptAlive>, Problem> {
    let session = service.sessions.get(client, &id)?;
    let locks = session.keepalive(&service.sessions)?;
    Ok(Json(KeptAlive {
        expires_in_ms: millis(session.left()),
        locks: locks.into_iter().map(SessionLock::from).collect(),
    }))
}

impl From<Held> for SessionLock {
    fn from(held: Held) -> Self {
        Self {
            name: held.name,
            kind: held.kind,
            lease: held.lease,
            permit: held.permit.as_ref().map(|(id, _)| id.clone()),
            slot: held.permit.map(|(_, slot)| slot),
            held: held.valid_for.is_some(),
            valid_for_ms: held.valid_for.map_or(0, millis),
        }
    }
}

#[derive(Debug, Serialize)]
pub(crate) struct Ended {
    released: usize,
}

pub(crate) async fn delete(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(id): Path<String>,
) -> Result<Json<Ended>, Problem> {
    let session = service.sessions.get(client, &id)?;
    let released = service.sessions.end(&session).await;
    Ok(Json(Ended { released }))
}

/// `duration` in whole ms, for JSON.
pub(crate) fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
