//! The semaphore routes: at most `permits` holders of a name at once, each
//! in a slot with its own fencing token. A permit is kept by a session
//! (`sessions.rs`), which extends it while its keepalives arrive and
//! releases it when they stop. Every user of a name must give the same
//! `permits`: the slots are what cap the holders.
//!
//! - `POST /v1/semaphores/{name}/acquire` `{"session", "permits", "ttl_ms",
//!   "wait_ms"}` → 200 `{"permit", "slot", "fence", "expires_in_ms"}`;
//!   409 every permit still taken after `wait_ms`.
//! - `POST /v1/semaphores/{name}/release` `{"session", "permit"}` → 200
//!   `{"released_on"}`; 404 `no_permit` when the session holds no such one.

use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};

use super::auth::Client;
use super::kept::{Kept, fenced};
use super::locks::{Released, redlock_for};
use super::problem::Problem;
use super::session_routes::millis;
use super::{Service, input};

/// The most permits a semaphore may have (each is a slot key on every node).
const MAX_PERMITS: usize = 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AcquireRequest {
    session: String,
    permits: usize,
    ttl_ms: u64,
    #[serde(default)]
    wait_ms: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct Acquired {
    permit: String,
    slot: usize,
    fence: u64,
    expires_in_ms: u64,
}

pub(crate) async fn acquire(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(name): Path<String>,
    body: Result<Json<AcquireRequest>, JsonRejection>,
) -> Result<Json<Acquired>, Problem> {
    let Json(request) = body?;
    let name = input::name(&name)?;
    if !(1..=MAX_PERMITS).contains(&request.permits) {
        return Err(Problem::bad_request(format!(
            "permits must be from 1 to {MAX_PERMITS}"
        )));
    }
    let ttl = service.limits.ttl(request.ttl_ms)?;
    let wait = service.limits.wait(request.wait_ms)?;
    let session = service.sessions.get(client, &request.session)?;
    let semaphore = (redlock_for(&service.redlock, ttl, wait)?.semaphore(name, request.permits))
        .map_err(|e| Problem::of(&e))?;
    let permit =
        (service.once_or_waiting(client, wait, semaphore.try_acquire(), semaphore.acquire()))
            .await?;
    let (permit, fence) = fenced(permit, ttl).await?;
    let (id, slot) = (permit.owner().to_string(), permit.slot());
    let valid_for = service
        .sessions
        .keep(&session, Kept::Permit(permit))
        .await?;
    Ok(Json(Acquired {
        permit: id,
        slot,
        fence: fence.get(),
        expires_in_ms: millis(valid_for),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReleaseRequest {
    session: String,
    permit: String,
}

pub(crate) async fn release(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(name): Path<String>,
    body: Result<Json<ReleaseRequest>, JsonRejection>,
) -> Result<Json<Released>, Problem> {
    let Json(request) = body?;
    let name = input::name(&name)?;
    let session = service.sessions.get(client, &request.session)?;
    let permit = service
        .sessions
        .take_kept(&session, "permit", name, Some(&request.permit))
        .ok_or_else(|| {
            Problem::new(
                StatusCode::NOT_FOUND,
                "no_permit",
                "this session holds no such permit of this semaphore",
            )
        })?;
    let released_on = permit.release().await.map_err(|e| Problem::of(&e))?;
    Ok(Json(Released { released_on }))
}
