//! The read-write lock routes. A write lock excludes every other hold of
//! its name (readers, writers, plain locks); it is handed out as a lease
//! of kind `write`, extended and released on the lock routes (`locks.rs`)
//! like a plain lock's. Read locks share their name with each other only;
//! a reader's hold is no lease, so a session keeps it (`sessions.rs`),
//! extended while its keepalives arrive and released when they stop. A
//! waiting writer's intent holds off new readers, as in the library.
//!
//! - `POST /v1/rwlocks/{name}/write` `{"ttl_ms", "wait_ms", "session"}` →
//!   200 `{"lease", "fence", "expires_in_ms"}`; 409 still held after
//!   `wait_ms`.
//! - `POST /v1/rwlocks/{name}/read` `{"session", "ttl_ms", "wait_ms"}` →
//!   200 `{"read", "fence", "expires_in_ms"}`; 409 a writer still holds it
//!   (or waits for it) after `wait_ms`.
//! - `POST /v1/rwlocks/{name}/read/release` `{"session", "read"}` → 200
//!   `{"released_on"}`; 404 `no_read` when the session holds no such one.

use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};

use super::auth::Client;
use super::kept::{Kept, fenced};
use super::locks::{Granted, LockRequest, Released, redlock_for};
use super::problem::Problem;
use super::session_routes::millis;
use super::{Service, input};

pub(crate) async fn write(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(name): Path<String>,
    body: Result<Json<LockRequest>, JsonRejection>,
) -> Result<Json<Granted>, Problem> {
    let Json(request) = body?;
    let name = input::name(&name)?;
    let asked = request.checked(&service, client)?;
    let redlock = &asked.redlock;
    let (once, waiting) = (redlock.try_write_lock(name), redlock.write_lock(name));
    let write = service
        .once_or_waiting(client, asked.wait, once, waiting)
        .await?;
    asked.grant(&service, write).await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadRequest {
    session: String,
    ttl_ms: u64,
    #[serde(default)]
    wait_ms: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct ReadGranted {
    read: String,
    fence: u64,
    expires_in_ms: u64,
}

pub(crate) async fn read(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(name): Path<String>,
    body: Result<Json<ReadRequest>, JsonRejection>,
) -> Result<Json<ReadGranted>, Problem> {
    let Json(request) = body?;
    let name = input::name(&name)?;
    let ttl = service.limits.ttl(request.ttl_ms)?;
    let wait = service.limits.wait(request.wait_ms)?;
    let session = service.sessions.get(client, &request.session)?;
    let redlock = redlock_for(&service.redlock, ttl, wait)?;
    let (once, waiting) = (redlock.try_read_lock(name), redlock.read_lock(name));
    let read = service.once_or_waiting(client, wait, once, waiting).await?;
    let (read, fence) = fenced(read, ttl).await?;
    let id = read.owner().to_string();
    let valid_for = service.sessions.keep(&session, Kept::Read(read)).await?;
    Ok(Json(ReadGranted {
        read: id,
        fence: fence.get(),
        expires_in_ms: millis(valid_for),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadReleaseRequest {
    session: String,
    read: String,
}

pub(crate) async fn release_read(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(name): Path<String>,
    body: Result<Json<ReadReleaseRequest>, JsonRejection>,
) -> Result<Json<Released>, Problem> {
    let Json(request) = body?;
    let name = input::name(&name)?;
    let session = service.sessions.get(client, &request.session)?;
    let read = service
        .sessions
        .take_kept(&session, "read", name, Some(&request.read))
        .ok_or_else(|| {
            Problem::new(
                StatusCode::NOT_FOUND,
                "no_read",
                "this session holds no such read lock of this name",
            )
        })?;
    let released_on = read.release().await.map_err(|e| Problem::of(&e))?;
    Ok(Json(Released { released_on }))
}
