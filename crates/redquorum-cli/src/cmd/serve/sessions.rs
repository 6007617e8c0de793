//! Sessions: a dead-man switch for an HTTP client's locks and leaderships
//! (`kept.rs`). A lock taken in
//! a session is kept by this replica, its watchdog extending it, for as
//! long as the session's keepalives arrive within its TTL; when they stop,
//! or the session is deleted, its locks are released. A client that
//! crashes so loses its locks within the session's TTL, not the locks' own.
//!
//! A session lives in the replica that made it (the client keeps talking
//! to that one); a replica that dies stops extending, and its sessions'
//! locks expire within their own TTL. What a client may believe: a lock of
//! its session is held from when it sent a keepalive for the `valid_for`
//! that keepalive answered, which never reaches past the session's own
//! end, so no lock is released while its client may still use it (nor
//! when the service stops: it then only stops extending).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use uuid::Uuid;

use super::auth::Client;
use super::kept::Kept;
use super::metrics_route::SESSIONS;
use super::problem::Problem;

/// Sessions one client may have at once.
pub(crate) const MAX_SESSIONS_PER_CLIENT: usize = 256;

/// Locks one session may hold at once.
pub(crate) const MAX_LOCKS_PER_SESSION: usize = 1024;

/// Every session of this replica, by id.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    by_id: Mutex<HashMap<Uuid, Arc<Session>>>,
    /// Which session holds the lock of each owner token (for a release by lease).
    by_owner: Mutex<HashMap<String, Uuid>>,
}

/// One client's session.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) id: Uuid,
    client: Client,
    pub(crate) ttl: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// The session ends here unless a keepalive moves it.
    deadline: Instant,
    /// Its locks, by owner token.
    locks: HashMap<String, Kept>,
    ended: bool,
}

/// A hold of a session as a keepalive reports it.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) name: String,
    pub(crate) kind: &'static str,
    pub(crate) lease: Option<String>,
    /// A permit's id and slot.
    pub(crate) permit: Option<(String, usize)>,
    /// Held for this long from the keepalive at most (None: lost).
    pub(crate) valid_for: Option<Duration>,
}

impl Sessions {
    /// A new session of `client`'s, ended by its reaper when no keepalive
    /// comes within `ttl`; 429 past [`MAX_SESSIONS_PER_CLIENT`].
    pub(crate) fn create(
        self: &Arc<Self>,
        client: Client,
        ttl: Duration,
    ) -> Result<Arc<Session>, Problem> {
        let mut by_id = lock(&self.by_id);
        if by_id.values().filter(|s| s.client == client).count() >= MAX_SESSIONS_PER_CLIENT {
            return Err(Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_sessions",
                format!("this client has {MAX_SESSIONS_PER_CLIENT} sessions already"),
            ));
        }
        let session = Arc::new(Session {
            id: Uuid::new_v4(),
            client,
            ttl,
            state: Mutex::new(State {
                deadline: Instant::now() + ttl,
                locks: HashMap::new(),
                ended: false,
            }),
        });
        by_id.insert(session.id, Arc::clone(&session));
        metrics::gauge!(SESSIONS).increment(1.0);
        tokio::spawn(reap(Arc::clone(self), Arc::clone(&session)));
        Ok(session)
    }

    /// `client`'s session `id`: 404 when there is none (or it is another client's).
    pub(crate) fn get(&self, client: Client, id: &str) -> Result<Arc<Session>, Problem> {
        let found = Uuid::parse_str(id)
            .ok()
            .and_then(|id| lock(&self.by_id).get(&id).cloned())
            .filter(|session| session.client == client);
        found.ok_or_else(|| {
            Problem::new(
                StatusCode::NOT_FOUND,
                "no_session",
                "no such session: it ended (no keepalive within its TTL, or deleted), or was never made here",
            )
        })
    }

    /// Keeps `held` in `session` (its watchdog extends it from now on) and
    /// answers how long the client may use it; a session that has ended or
    /// is full gets it released, and the refusal answered.
    pub(crate) async fn keep(&self, session: &Session, held: Kept) -> Result<Duration, Problem> {
        match self.add(session, held) {
            Ok(valid_for) => Ok(valid_for),
            Err(refused) => {
                let (held, problem) = *refused;
                let _ = held.release().await;
                Err(problem)
            }
        }
    }

    /// [`keep`](Self::keep) without the release: the hold back when refused.
    fn add(&self, session: &Session, mut held: Kept) -> Result<Duration, Box<(Kept, Problem)>> {
        let mut state = lock_state(session);
        if state.is_over() {
            let ended = Problem::new(StatusCode::NOT_FOUND, "no_session", "the session ended");
            return Err(Box::new((held, ended)));
        }
        if state.locks.len() >= MAX_LOCKS_PER_SESSION {
            let message = format!("the session holds {MAX_LOCKS_PER_SESSION} locks already");
            let full = Problem::new(StatusCode::TOO_MANY_REQUESTS, "too_many_locks", message);
            return Err(Box::new((held, full)));
        }
        held.auto_extend();
        let valid_for = held.valid_for().unwrap_or_default().min(state.left());
        let owner = held.owner();
        lock(&self.by_owner).insert(owner.clone(), session.id);
        state.locks.insert(owner, held);
        Ok(valid_for)
    }

    /// The lock of `owner` if a session holds it, out of its session.
    pub(crate) fn take_lock(&self, client: Client, owner: &str) -> Option<Kept> {
        let id = lock(&self.by_owner).get(owner).copied()?;
        let session = lock(&self.by_id).get(&id).cloned()?;
        if session.client != client {
            return None;
        }
        let taken = lock_state(&session).locks.remove(owner);
        lock(&self.by_owner).remove(owner);
        taken
    }

    /// `session`'s hold of `kind` on `name` (the one of owner `owner`, if
    /// given), out of it.
    pub(crate) fn take_kept(
        &self,
        session: &Session,
        kind: &str,
        name: &str,
        owner: Option<&str>,
    ) -> Option<Kept> {
        let mut state = lock_state(session);
        let found = (state.locks.iter())
            .find(|(id, held)| {
                held.kind() == kind && held.resource() == name && owner.is_none_or(|o| o == *id)
            })
            .map(|(id, _)| id.clone())?;
        lock(&self.by_owner).remove(&found);
        state.locks.remove(&found)
    }

    /// Ends `session`: out of the table, its locks released (all at once);
    /// how many were released on a quorum.
    pub(crate) async fn end(&self, session: &Session) -> usize {
        let locks = self.close(session, |_| true).unwrap_or_default();
        release_all(locks).await
    }

    /// Stops every session without releasing its locks (the service is
    /// stopping: their clients may still hold them, so they expire).
    pub(crate) fn forget_all(&self) {
        let sessions: Vec<_> = lock(&self.by_id).values().cloned().collect();
        for session in sessions {
            let locks = self.close(&session, |_| true).unwrap_or_default();
            locks.into_iter().for_each(Kept::forget);
        }
    }

    /// Marks `session` ended and takes it out of the tables, if `now`
    /// holds of its state (checked under the same lock as keepalives);
    /// its locks.
    fn close(&self, session: &Session, now: impl Fn(&State) -> bool) -> Option<Vec<Kept>> {
        let mut state = lock_state(session);
        if state.ended || !now(&state) {
            return None;
        }
        state.ended = true;
        lock(&self.by_id).remove(&session.id);
        metrics::gauge!(SESSIONS).decrement(1.0);
        let locks: Vec<(String, Kept)> = state.locks.drain().collect();
        let mut by_owner = lock(&self.by_owner);
        let locks = locks.into_iter().map(|(owner, held)| {
            by_owner.remove(&owner);
            held
        });
        Some(locks.collect())
    }
}

impl Session {
    /// Moves the session's end to a TTL from now and reports its locks;
    /// those lost are reported once and dropped. 404 once it has ended.
    pub(crate) fn keepalive(&self, sessions: &Sessions) -> Result<Vec<Held>, Problem> {
        let mut state = lock_state(self);
        if state.is_over() {
            return Err(Problem::new(
                StatusCode::NOT_FOUND,
                "no_session",
                "the session ended",
            ));
        }
        state.deadline = Instant::now() + self.ttl;
        let left = state.left();
        let report = (state.locks.values())
            .map(|held| Held {
                name: held.resource().to_owned(),
                kind: held.kind(),
                lease: held.lease(),
                permit: held.permit(),
                valid_for: held.valid_for().map(|valid| valid.min(left)),
            })
            .collect();
        let lost: Vec<String> = (state.locks.iter())
            .filter(|(_, held)| held.valid_for().is_none())
            .map(|(owner, _)| owner.clone())
            .collect();
        for owner in lost {
            state.locks.remove(&owner);
            lock(&sessions.by_owner).remove(&owner);
        }
        Ok(report)
    }

    /// How long until the session ends without a keepalive.
    pub(crate) fn left(&self) -> Duration {
        lock_state(self).left()
    }
}

impl State {
    fn left(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Ended, or past its deadline (its reaper is about to end it): no
    /// keepalive revives it.
    fn is_over(&self) -> bool {
        self.ended || Instant::now() >= self.deadline
    }
}

/// Ends `session` once its deadline passes with no keepalive moving it.
async fn reap(sessions: Arc<Sessions>, session: Arc<Session>) {
    loop {
        let (deadline, ended) = {
            let state = lock_state(&session);
            (state.deadline, state.ended)
        };
        if ended {
            return;
        }
        tokio::time::sleep_until(deadline.into()).await;
        // A keepalive may have moved the deadline meanwhile: only a
        // deadline still passed, under the keepalives' lock, ends it.
        let expired = |state: &State| Instant::now() >= state.deadline;
        if let Some(locks) = sessions.close(&session, expired) {
            let released = release_all(locks).await;
            stderr_line!(
                "redquorum serve: session {} expired (no keepalive within {} ms): {released} holds released",
                session.id,
                session.ttl.as_millis()
            );
            return;
        }
    }
}

/// Releases `locks` all at once; how many were released on a quorum.
async fn release_all(locks: Vec<Kept>) -> usize {
    let released = futures::future::join_all(locks.into_iter().map(Kept::release)).await;
    released.into_iter().filter(Result::is_ok).count()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn lock_state(session: &Session) -> MutexGuard<'_, State> {
    lock(&session.state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_keepalive_moves_the_end_and_an_ended_session_stays_ended() {
        let sessions = Arc::new(Sessions::default());
        let client = Client::for_tests(0);
        let ttl = Duration::from_secs(1);
        let session = sessions.create(client, ttl).unwrap();
        let id = session.id.to_string();
        tokio::time::sleep(ttl / 2).await;
        assert!(session.keepalive(&sessions).is_ok());
        assert!(session.left() > ttl * 3 / 4, "{:?}", session.left());
        // Reaped once a TTL passes without a keepalive (bounded wait).
        let start = Instant::now();
        while sessions.get(client, &id).is_ok() {
            assert!(start.elapsed() < Duration::from_secs(10), "never reaped");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            start.elapsed() >= ttl * 3 / 4,
            "reaped early: {:?}",
            start.elapsed()
        );
        assert!(
            session.keepalive(&sessions).is_err(),
            "revived by a late keepalive"
        );
    }

    #[tokio::test]
    async fn a_session_is_its_clients_alone_and_capped_per_client() {
        let sessions = Arc::new(Sessions::default());
        let (owner, other) = (Client::for_tests(0), Client::for_tests(1));
        let id = (sessions.create(owner, Duration::from_secs(60)).unwrap().id).to_string();
        assert!(sessions.get(other, &id).is_err());
        assert!(sessions.get(owner, "not-an-id").is_err());
        for _ in 1..MAX_SESSIONS_PER_CLIENT {
            sessions.create(owner, Duration::from_secs(60)).unwrap();
        }
        assert!(sessions.create(owner, Duration::from_secs(60)).is_err());
        assert!(sessions.create(other, Duration::from_secs(60)).is_ok());
    }
}
