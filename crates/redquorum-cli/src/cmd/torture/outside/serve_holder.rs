//! The serve holders: a torture client that locks over HTTP, as a program
//! in another language does, through `redquorum serve` (this binary,
//! serving on the group's proxied nodes, its defaults): take the lock, do
//! the run's fenced read-modify-write within the time the service said,
//! release by the lease. The session is judged like any other holder's.
//!
//! What is recorded, and why it is honest:
//! - grant: when the service's answer came (the client holds from then);
//! - validity end: when the request was sent plus the `expires_in_ms` the
//!   service answered (its "now" was no earlier than the send, so this is
//!   no later than the lease's own end);
//! - owner: the lease's owner token; fence: the answer's token;
//! - release: when the release request was sent (the client stops using
//!   the lock then); released: when it was answered 200 (a quorum released).
//!   Half the holders overrun their time (a job that took longer
//!   than its lease: they write nothing then) and release all the same,
//!   when the lock may be another's: that release must remove nothing;
//! - a refused request: refused when its answer came. Its attempts ran in
//!   the service's process, which tells no attempt tokens (as `exec` tells
//!   none), so the orphan rule judges their keys as it does `exec`'s.

use std::sync::Mutex;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use redquorum_harness::{History, Outcome, ProtectedStore, Session};
use serde::Deserialize;

use super::{drawn, planted_bug, refused};
use crate::serve_child::ServeChild;

/// The kind a serve holder's session is recorded with.
pub(crate) const KIND: &str = "serve";
/// One session in this many of the group's goes through the service.
const ONE_IN: u32 = 4;
/// An honest holder writes only with this much of its time left (the
/// workload's write margin).
const WRITE_MARGIN: Duration = Duration::from_millis(250);

/// How a serve holder uses the lock it was granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Reads, holds this long, writes (with the margin left).
    Brief(Duration),
    /// Holds until its time less the write margin, then writes.
    ToDeadline,
    /// Reads, then overruns its time by half a TTL (a job that took
    /// longer than its lease), writes nothing, and releases all the same:
    /// a release of a lease that may be another's lock by then.
    Overrun,
}

/// A client group's serve holder: the service it started, and its client.
#[derive(Debug)]
pub(crate) struct ServeHolder {
    service: ServeChild,
    http: reqwest::Client,
    ttl: Duration,
    rng: Mutex<rand::rngs::StdRng>,
}

/// A lock granted over HTTP.
#[derive(Debug, Deserialize)]
struct Granted {
    lease: String,
    fence: u64,
    expires_in_ms: u64,
}

impl ServeHolder {
    /// Starts `redquorum serve` on `urls`, keys under `prefix`, for leases
    /// of `ttl`, seeded with `seed`. `Err` says why it did not start.
    pub(crate) fn start(
        urls: &[String],
        prefix: &str,
        ttl: Duration,
        seed: u64,
    ) -> Result<Self, String> {
        // A planted bug of the run is the service's too.
        let service = ServeChild::start(urls, &["--key-prefix", prefix], planted_bug)
            .map_err(|e| format!("serve holder: {e}"))?;
        Ok(Self {
            service,
            http: reqwest::Client::new(),
            ttl,
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(seed)),
        })
    }

    /// Whether this session goes through the service, and how it holds.
    fn draw(&self) -> Option<Use> {
        let mut rng = drawn(&self.rng, ONE_IN)?;
        Some(match rng.gen_range(0..4) {
            0 => Use::ToDeadline,
            1 => Use::Brief(Duration::from_millis(rng.gen_range(0..=50))),
            _ => Use::Overrun,
        })
    }

    /// One session through the service, when drawn.
    pub(crate) async fn session(
        &self,
        resource: &str,
        history: &History,
        store: &ProtectedStore,
    ) -> Option<Session> {
        let how = self.draw()?;
        let start = history.now();
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let body = serde_json::json!({"ttl_ms": ms(self.ttl), "wait_ms": ms(self.ttl)});
        let asked = (self
            .http
            .post(format!("{}/v1/locks/{resource}", self.service.url)))
        .json(&body)
        .timeout(self.ttl * 10)
        .send()
        .await;
        let granted = match asked {
            Ok(answer) if answer.status().is_success() => answer.json::<Granted>().await.ok(),
            Ok(answer) => {
                let why = match answer.status().as_u16() {
                    409 => "contended",
                    503 => "unavailable",
                    _ => "other",
                };
                return Some(refused(KIND, resource, start, why, history.now()));
            }
            Err(_) => None,
        };
        let Some(granted) = granted else {
            return Some(refused(KIND, resource, start, "other", history.now()));
        };
        let grant = history.now();
        let owner = granted.lease.split(':').nth(2).unwrap_or_default();
        let deadline = start + Duration::from_millis(granted.expires_in_ms);
        let mut session = Session::granted(0, resource, owner, start, grant, deadline);
        session.kind = KIND.to_owned();
        session.fence = Some(granted.fence);
        self.use_lock(&mut session, how, store, history).await;
        session.release = Some(history.now());
        let released = (self
            .http
            .post(format!("{}/v1/locks/{resource}/release", self.service.url)))
        .json(&serde_json::json!({"lease": granted.lease}))
        .timeout(self.ttl * 10)
        .send()
        .await;
        if released.is_ok_and(|answer| answer.status().is_success()) {
            session.released = Some(history.now());
        }
        session.ended = Some(history.now());
        Some(session)
    }

    /// The fenced read-modify-write of every holder, written only with
    /// [`WRITE_MARGIN`] of its time left, held between them as `how` says.
    async fn use_lock(
        &self,
        session: &mut Session,
        how: Use,
        store: &ProtectedStore,
        history: &History,
    ) {
        let (resource, fence) = (session.resource.clone(), session.fence);
        let deadline = session.validity_end.unwrap_or_default();
        (session.write_start, session.write_end) = (None, None);
        session.outcome = Outcome::Abandoned;
        let reader = store.clone();
        let read =
            tokio::task::spawn_blocking(move || reader.read_fenced_blocking(&resource, fence))
                .await;
        let value = match read {
            Ok(Ok(Some(value))) => value,
            Ok(Ok(None)) => {
                session.outcome = Outcome::Rejected;
                return;
            }
            _ => return,
        };
        (session.read, session.read_at) = (Some(value), Some(history.now()));
        let until = deadline.saturating_sub(WRITE_MARGIN);
        let hold = match how {
            Use::Brief(hold) => hold,
            Use::ToDeadline => until.saturating_sub(history.now()),
            Use::Overrun => (deadline + self.ttl / 2).saturating_sub(history.now()),
        };
        tokio::time::sleep(hold).await;
        if history.now() > until {
            return;
        }
        let (writer, resource) = (store.clone(), session.resource.clone());
        session.write_start = Some(history.now());
        session.wrote = Some(value + 1);
        session.outcome = Outcome::Indeterminate("the write's answer was lost".into());
        let wrote = tokio::task::spawn_blocking(move || {
            writer.write_fenced_blocking(&resource, value + 1, fence)
        })
        .await;
        if let Ok(Ok(accepted)) = wrote {
            session.write_end = Some(history.now());
            session.outcome = if accepted {
                Outcome::Completed
            } else {
                Outcome::Rejected
            };
        }
    }
}
