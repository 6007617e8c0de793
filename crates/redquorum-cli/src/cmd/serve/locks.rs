//! The lock routes. A lock is taken for the TTL the client asks and handed
//! out as its lease (the one-line ticket string) with a fencing token; the
//! service keeps nothing (unless a session keeps the lock): extending
//! resumes the lease's hold, owner-checked on a quorum (`Redlock::resume`),
//! and releasing releases it where its owner still holds it
//! (`Redlock::release_ticket`). A client that goes away
//! mid-request cancels it: an acquire under way is unwound, a lock taken
//! but not yet answered is released.
//!
//! - `POST /v1/locks/{name}` `{"ttl_ms", "wait_ms", "session"}` → 200
//!   `{"lease", "fence", "expires_in_ms"}`; 409 still taken after
//!   `wait_ms`. With a session (`sessions.rs`) the service keeps the lock,
//!   extending it while the session lives; `expires_in_ms` is then how
//!   long it is held without a keepalive.
//! - `POST /v1/locks/{name}/extend` `{"lease", "ttl_ms"}` → 200 `{"lease",
//!   "expires_in_ms"}`; 410 when the hold is gone.
//! - `POST /v1/locks/{name}/release` `{"lease"}` → 200 `{"released_on"}`;
//!   410 when the hold is gone (nothing removed).
//! - `GET /v1/locks/{name}` → `{"held", "kind", "holders", "fence"}`.
//!
//! 503 when no quorum answered (the message names the nodes and causes).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::{Extension, Json};
use redquorum::{Lock, LockOptions, Redlock, Ticket, WriteLock};
use serde::{Deserialize, Serialize};

use super::auth::Client;
use super::kept::{Leased, fenced};
use super::problem::Problem;
use super::session_routes::millis;
use super::sessions::Session;
use super::{Service, input};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LockRequest {
    ttl_ms: u64,
    #[serde(default)]
    wait_ms: u64,
    /// A session of the client's, which then keeps the lock.
    #[serde(default)]
    session: Option<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Granted {
    lease: String,
    fence: u64,
    expires_in_ms: u64,
}

pub(crate) async fn lock(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(name): Path<String>,
    body: Result<Json<LockRequest>, JsonRejection>,
) -> Result<Json<Granted>, Problem> {
    let Json(request) = body?;
    let name = input::name(&name)?;
    let asked = request.checked(&service, client)?;
    let redlock = &asked.redlock;
    let lock = (service.once_or_waiting(
        client,
        asked.wait,
        redlock.try_lock(name),
        redlock.lock(name),
    ))
    .await?;
    asked.grant(&service, lock).await
}

/// A lock request, checked: the lock to take it with, and the session
/// that keeps it if one was named.
#[derive(Debug)]
pub(super) struct Asked {
    pub(super) redlock: Redlock,
    pub(super) wait: Duration,
    ttl: Duration,
    session: Option<Arc<Session>>,
}

impl LockRequest {
    /// Checked before anything is sent: a session that is not there, or a
    /// TTL or wait out of bounds, takes nothing.
    pub(super) fn checked(&self, service: &Service, client: Client) -> Result<Asked, Problem> {
        let ttl = service.limits.ttl(self.ttl_ms)?;
        let wait = service.limits.wait(self.wait_ms)?;
        let session = (self.session.as_deref())
            .map(|id| service.sessions.get(client, id))
            .transpose()?;
        Ok(Asked {
            redlock: redlock_for(&service.redlock, ttl, wait)?,
            wait,
            ttl,
            session,
        })
    }
}

impl Asked {
    /// The answer for `held`, just granted: fenced, and kept in the
    /// session if one was named (else handed out as its lease alone).
    pub(super) async fn grant<H: Leased>(
        self,
        service: &Service,
        held: H,
    ) -> Result<Json<Granted>, Problem> {
        let (held, fence) = fenced(held, self.ttl).await?;
        let Some(session) = self.session else {
            let ticket = held.into_ticket();
            return Ok(Json(Granted {
                lease: ticket.to_string(),
                fence: fence.get(),
                expires_in_ms: expires_in_ms(&ticket),
            }));
        };
        let lease = held.ticket().to_string();
        let valid_for = service.sessions.keep(&session, held.into_kept()).await?;
        Ok(Json(Granted {
            lease,
            fence: fence.get(),
            expires_in_ms: millis(valid_for),
        }))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExtendRequest {
    lease: String,
    ttl_ms: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct Extended {
    lease: String,
    expires_in_ms: u64,
}

pub(crate) async fn extend(
    State(service): State<Arc<Service>>,
    Path(name): Path<String>,
    body: Result<Json<ExtendRequest>, JsonRejection>,
) -> Result<Json<Extended>, Problem> {
    let Json(request) = body?;
    let ticket = input::lease(&request.lease, input::name(&name)?)?;
    let ttl = service.limits.ttl(request.ttl_ms)?;
    let redlock = redlock_for(&service.redlock, ttl, Duration::ZERO)?;
    // The lease says which kind it is of.
    let resumed = match ticket.kind() {
        "write" => (redlock.resume_write(&ticket).await).map(WriteLock::into_ticket),
        _ => (redlock.resume(&ticket).await).map(Lock::into_ticket),
    };
    let ticket = resumed.map_err(|e| Problem::of(&e))?;
    Ok(Json(Extended {
        lease: ticket.to_string(),
        expires_in_ms: expires_in_ms(&ticket),
    }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReleaseRequest {
    lease: String,
}

/// How many nodes released a hold (the answer of every release route).
#[derive(Debug, Serialize)]
pub(crate) struct Released {
    pub(super) released_on: usize,
}

pub(crate) async fn release(
    State(service): State<Arc<Service>>,
    Extension(client): Extension<Client>,
    Path(name): Path<String>,
    body: Result<Json<ReleaseRequest>, JsonRejection>,
) -> Result<Json<Released>, Problem> {
    let Json(request) = body?;
    let ticket = input::lease(&request.lease, input::name(&name)?)?;
    // A session's lock: released by the handle that extends it.
    let owner = ticket.owner().to_string();
    let released = match service.sessions.take_lock(client, &owner) {
        Some(held) => held.release().await,
        // Owner-checked on every node: a stale lease removes nothing.
        None if ticket.kind() == "write" => service.redlock.release_write_ticket(&ticket).await,
        None => service.redlock.release_ticket(&ticket).await,
    };
    let released_on = released.map_err(|e| Problem::of(&e))?;
    Ok(Json(Released { released_on }))
}

#[derive(Debug, Serialize)]
pub(crate) struct Inspected {
    /// Whether a quorum of nodes shows a holder.
    held: bool,
    /// The lock kind holding it (`lock`, `write`, `read`, ...), if held.
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    /// How many holders a quorum recognises (readers, permits: several).
    holders: usize,
    /// The highest fence counter any node showed (0: none yet).
    fence: u64,
}

pub(crate) async fn inspect(
    State(service): State<Arc<Service>>,
    Path(name): Path<String>,
) -> Result<Json<Inspected>, Problem> {
    let name = input::name(&name)?;
    let inspection = (service.redlock.inspect(name).await).map_err(|e| Problem::of(&e))?;
    let answered = inspection.nodes().filter(|(_, view)| view.is_ok()).count();
    if answered < service.redlock.quorum() {
        return Err(Problem::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            format!(
                "{answered} of {} nodes answered; a quorum is {}",
                service.redlock.nodes().count(),
                service.redlock.quorum()
            ),
        ));
    }
    // Holder tokens are capabilities: only their count leaves the service.
    let holders = inspection.holders(service.redlock.quorum());
    let fence = (inspection.nodes())
        .filter_map(|(_, view)| view.ok()?.fence())
        .max()
        .unwrap_or(0);
    Ok(Json(Inspected {
        held: !holders.is_empty(),
        kind: holders.first().map(|(kind, _)| kind.clone()),
        holders: holders.len(),
        fence,
    }))
}

/// The service's `Redlock` with the client's TTL and wait (it shares the
/// connections); a TTL the lock refuses (not above the node timeout) is a
/// 400.
pub(super) fn redlock_for(
    redlock: &Redlock,
    ttl: Duration,
    wait: Duration,
) -> Result<Redlock, Problem> {
    let options = LockOptions {
        ttl,
        wait,
        ..*redlock.options()
    };
    redlock
        .with_options(&options)
        .map_err(|e| Problem::bad_request(format!("ttl_ms, wait_ms: {e}")))
}

/// The lease's time left, from now.
fn expires_in_ms(ticket: &Ticket) -> u64 {
    let left = (ticket.valid_until())
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    millis(left)
}
