//! The exec holders: a torture client that locks as a shell user does,
//! through this binary's own `redquorum exec` (`--wait`, its defaults, the
//! group's proxied nodes), the command under it being `__torture-hold`
//! (`exec_hold.rs`), which does the run's fenced read-modify-write and
//! reports each step with its own clock. The session is judged like any
//! other holder's.
//!
//! What is recorded, and why it is honest:
//! - grant: when the command started, by its own clock: the holder's use
//!   of the lock begins there (`exec`'s grant inside it is not visible
//!   outside it, and comes before);
//! - end (release, and validity end): the command's last step, by its
//!   clock (it reports each step before taking it, so it does nothing with
//!   the resource after its last report), or, when that step was a write
//!   it never saw answered, when its report socket closed (only the command
//!   holds it: it is gone then);
//! - the dead-man case (`--kill-guard`): `exec` kills the orphaned command
//!   and leaves the lock to its TTL, saying how much validity was left; the
//!   session then holds (validity end, no release) until the command's end
//!   plus that, rounded down, which is no later than the lock's own
//!   expiry. An `exec` that says nothing released it;
//! - a hold `exec` took but ran no command under (its message names the
//!   owner): a session that claims no time, so its keys have an owner;
//! - ended, granted or not: when `exec` exited. Its release (or its unwind)
//!   comes after the command's last step and is done or given up by then,
//!   so the orphan-key rule measures its keys from there.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use redquorum_harness::{History, Outcome, ProtectedStore, Session};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::UnixListener;

use super::exec_hold::SUBCOMMAND;
use super::exec_left::{left_to_expire, unused_hold_owner};
use super::exec_lines::{Line, instant_of};
use super::exec_pipeline::Steps;
use super::{drawn, planted_bug, refusal, refused, unused_hold};

/// A duration as this binary's options take it.
pub(super) fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// The kind an exec holder's session is recorded with.
pub(crate) const KIND: &str = "exec";
/// One session in this many of the exec group runs under `exec`: each is
/// three process starts, so the run's other work still happens.
const ONE_IN: u32 = 3;
/// Of those, in fifths: `exec` alone in two, a pipeline's
/// (`exec_pipeline.rs`) `exec --ticket` in one, the job's own steps on the
/// ticket in two.
const ROUTES: u32 = 5;

/// What the command under `exec` does: how it holds, and for how long.
#[derive(Debug, Clone, Copy)]
pub(super) struct Job {
    how: Use,
    hold: Duration,
}

/// How a session goes through this binary.
#[derive(Debug, Clone, Copy)]
enum Route {
    /// `exec` takes the lock and runs the job.
    Exec(Job),
    /// `lock`, then `exec --ticket` runs the job.
    Pipeline(Job),
    /// `lock`, then the job's own steps on the ticket.
    Steps(Steps),
}

/// How the command under `exec` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Reads, holds 0–50 ms, writes.
    Brief,
    /// Holds 1.5 TTL: `exec`'s watchdog extends under the faults, and stops
    /// the command when it cannot.
    Long,
    /// Kills its guard first, then holds a quarter TTL and writes.
    KillsGuard,
}

/// A client group's exec holder.
#[derive(Debug)]
pub(crate) struct ExecHolder {
    /// `--nodes .. -q`: what every command of this binary it runs starts with.
    pub(super) nodes: Vec<String>,
    /// `--ttl .. --key-prefix ..` (and `--max-ttl`): `exec`'s lease.
    lease: Vec<String>,
    pub(super) ttl: Duration,
    pub(super) prefix: String,
    pub(super) rng: Mutex<rand::rngs::StdRng>,
    /// Names the report sockets apart.
    sessions: AtomicU64,
    group: usize,
}

impl ExecHolder {
    /// An exec holder on `urls`, keys under `prefix`, leases of `ttl`
    /// (`max_ttl`: the delayed-restart rule), seeded with `seed`.
    pub(crate) fn new(
        urls: &[String],
        prefix: &str,
        ttl: Duration,
        max_ttl: Option<Duration>,
        seed: u64,
        group: usize,
    ) -> Self {
        let mut lease = vec![
            "--ttl".to_owned(),
            ms(ttl),
            "--key-prefix".to_owned(),
            prefix.to_owned(),
        ];
        if let Some(max_ttl) = max_ttl {
            lease.extend(["--max-ttl".to_owned(), ms(max_ttl)]);
        }
        Self {
            nodes: vec!["--nodes".to_owned(), urls.join(","), "-q".to_owned()],
            lease,
            ttl,
            prefix: prefix.to_owned(),
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(seed)),
            sessions: AtomicU64::new(0),
            group,
        }
    }

    /// Whether this session goes through this binary, and how: `exec`
    /// (how its command holds), or a pipeline's `redquorum lock` first.
    fn draw(&self) -> Option<Route> {
        let mut rng = drawn(&self.rng, ONE_IN)?;
        let (how, hold) = match rng.gen_range(0..3) {
            0 => (Use::Long, self.ttl * 3 / 2),
            1 => (Use::KillsGuard, self.ttl / 4),
            _ => (Use::Brief, Duration::from_millis(rng.gen_range(0..=50))),
        };
        let job = Job { how, hold };
        Some(match rng.gen_range(0..ROUTES) {
            0 => Route::Pipeline(job),
            1 | 2 => Route::Steps(Steps {
                extend: rng.gen_bool(0.5),
                late: rng.gen_bool(0.5),
            }),
            _ => Route::Exec(job),
        })
    }

    /// The sessions of `exec` (and of the `lock` before it, in a
    /// pipeline), when drawn; none otherwise.
    pub(crate) async fn sessions(
        &self,
        resource: &str,
        history: &History,
        store: &ProtectedStore,
    ) -> Vec<Session> {
        match self.draw() {
            None => Vec::new(),
            Some(Route::Exec(job)) => vec![self.session(resource, history, store, job, None).await],
            Some(Route::Pipeline(job)) => self.pipeline(resource, history, store, job).await,
            Some(Route::Steps(steps)) => self.ticket_steps(resource, history, steps).await,
        }
    }

    /// One session under `exec`: taking the lock (waiting up to a TTL), or
    /// adopting `ticket`.
    pub(super) async fn session(
        &self,
        resource: &str,
        history: &History,
        store: &ProtectedStore,
        job: Job,
        ticket: Option<&str>,
    ) -> Session {
        let socket = std::env::temp_dir().join(format!(
            "redquorum-torture-{}-{}-{}.sock",
            std::process::id(),
            self.group,
            self.sessions.fetch_add(1, Ordering::Relaxed)
        ));
        let start = history.now();
        let session = match UnixListener::bind(&socket) {
            // Bounded: an `exec` that has not ended by then is killed (seen
            // once: an `exec --wait 2s` still acquiring after 15 minutes),
            // and the session counted as refused, `hung`.
            Ok(listener) => tokio::time::timeout(
                self.ttl * 10,
                self.run(resource, history, store, &socket, listener, job, ticket),
            )
            .await
            // Dropped, the `exec` is killed (`kill_on_drop`): it ends now.
            .unwrap_or_else(|_| refused(KIND, resource, start, "hung", history.now())),
            Err(_) => refused(KIND, resource, start, "other", history.now()),
        };
        let _ = std::fs::remove_file(&socket);
        session
    }

    #[allow(clippy::too_many_arguments)]
    async fn run(
        &self,
        resource: &str,
        history: &History,
        store: &ProtectedStore,
        socket: &Path,
        listener: UnixListener,
        Job { how, hold }: Job,
        ticket: Option<&str>,
    ) -> Session {
        let start = history.now();
        let Ok(me) = std::env::current_exe() else {
            return refused(KIND, resource, start, "other", history.now());
        };
        let mut command = tokio::process::Command::new(&me);
        command.args(&self.nodes).arg("exec").args(&self.lease);
        match ticket {
            Some(ticket) => command.args(["--ticket", ticket]),
            // Longer than the library clients' TTL / 2: `exec`'s own retry
            // pace loses most races against them.
            None => command.args(["--wait", &ms(self.ttl)]),
        };
        command
            .arg(resource)
            .arg("--")
            .arg(&me)
            .args([SUBCOMMAND, "--store", store.addr(), "--report"])
            .arg(PathBuf::from(socket))
            .args(["--hold", &format!("{}ms", hold.as_millis())])
            .args((how == Use::KillsGuard).then_some("--kill-guard"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        planted_bug(command.as_std_mut());
        let Ok(mut child) = command.spawn() else {
            return refused(KIND, resource, start, "other", history.now());
        };
        let mut stderr = child.stderr.take();
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            if let Some(stderr) = stderr.as_mut() {
                let _ = stderr.read_to_string(&mut text).await;
            }
            text
        });
        // The command connects once `exec` holds the lock; `exec` exits
        // first when it did not get it.
        let accepted = tokio::select! {
            biased;
            accepted = listener.accept() => accepted.ok(),
            // A command that connected and ended before we looked is still
            // in the backlog.
            _ = child.wait() => tokio::time::timeout(Duration::from_millis(1), listener.accept())
                .await
                .ok()
                .and_then(Result::ok),
        };
        let mut lines = Vec::new();
        let mut end = None;
        if let Some((stream, _)) = accepted {
            let mut reader = BufReader::new(stream).lines();
            // Bounded by the command's life: EOF when it is gone.
            while let Ok(Some(line)) = reader.next_line().await {
                lines.extend(Line::parse(&line));
            }
            end = Some(history.now());
        }
        let status = child.wait().await.ok();
        // `exec` has exited: its release or unwinds were sent, and waited
        // for up to the node timeout, by then.
        let exited = history.now();
        let stderr = stderr.await.unwrap_or_default();
        let code = status.and_then(|s| s.code());
        let mut session = match (lines.first(), end) {
            (Some(Line::Started { at, owner, fence }), Some(closed)) => {
                let end = use_ended(&lines, closed, history);
                let grant = history.at(instant_of(*at)).min(end);
                let mut session = Session::granted(0, resource, owner, start, grant, end);
                session.fence = *fence;
                session.kind = KIND.to_owned();
                // `exec`'s watchdog extends it in its own process.
                session.deadline_unseen = true;
                record_steps(&mut session, &lines[1..], history);
                // Not `released`: `exec -q` does not say whether its release
                // reached a quorum.
                match left_to_expire(&stderr) {
                    // Not released: held (on the nodes) until it expires,
                    // no sooner than this (`exec` said it after the
                    // command's last report).
                    Some(left) => {
                        let alive = last_report(&lines, history).unwrap_or(grant);
                        session.release = None;
                        session.validity_end = Some(alive + left);
                    }
                    None => session.release = Some(end),
                }
                session
            }
            // Granted, but no command ran (at risk at once, no token): a
            // hold that claims no time, recorded for its keys' owner.
            _ if unused_hold_owner(&stderr).is_some() => {
                // Held in `exec`'s own process, which ended with its release.
                let owner = unused_hold_owner(&stderr).unwrap_or_default();
                unused_hold(KIND, resource, owner, start, exited)
            }
            _ => {
                let why = match code {
                    // The ticket's hold was gone: nothing ran.
                    Some(70) if ticket.is_some() => "not-held",
                    _ => refusal(code),
                };
                refused(KIND, resource, start, why, exited)
            }
        };
        session.ended = Some(exited);
        session
    }
}

/// When the command's use of the lock ended: at its last report, by its
/// own clock, when it was then only holding (after its read, between
/// heartbeats) or done; but a store call in flight (its read after the
/// start, or a write it announced) may land until it was gone, when its
/// report socket `closed`.
fn use_ended(lines: &[Line], closed: Duration, history: &History) -> Duration {
    let at = match lines.last() {
        Some(Line::Started { .. } | Line::GuardKilled { .. } | Line::WriteStart { .. }) | None => {
            return closed;
        }
        Some(
            Line::Read { at, .. }
            | Line::Holding { at }
            | Line::Wrote { at, .. }
            | Line::Failed { at },
        ) => *at,
    };
    history.at(instant_of(at)).min(closed)
}

/// The last report's time (the command was alive then).
fn last_report(lines: &[Line], history: &History) -> Option<Duration> {
    let at = match lines.last()? {
        Line::Started { at, .. }
        | Line::GuardKilled { at }
        | Line::Read { at, .. }
        | Line::Holding { at }
        | Line::WriteStart { at, .. }
        | Line::Wrote { at, .. }
        | Line::Failed { at } => *at,
    };
    Some(history.at(instant_of(at)))
}

/// The steps after the start, into the session's read, write and outcome.
fn record_steps(session: &mut Session, steps: &[Line], history: &History) {
    let at = |ns: u64| history.at(instant_of(ns));
    session.write_start = None;
    session.write_end = None;
    session.outcome = Outcome::Abandoned;
    for step in steps {
        match step {
            Line::Read { at: t, value } => {
                session.read_at = Some(at(*t));
                session.read = *value;
                if value.is_none() {
                    session.outcome = Outcome::Rejected;
                }
            }
            Line::WriteStart { at: t, value } => {
                session.write_start = Some(at(*t));
                session.wrote = Some(*value);
                // Killed before the answer: it may have landed.
                session.outcome = Outcome::Indeterminate("the command ended mid-write".into());
            }
            Line::Wrote { at: t, accepted } => {
                session.write_end = Some(at(*t));
                session.outcome = if *accepted {
                    Outcome::Completed
                } else {
                    Outcome::Rejected
                };
            }
            Line::Failed { .. } if session.write_start.is_some() => {
                session.outcome = Outcome::Indeterminate("the store failed".into());
            }
            Line::Started { .. }
            | Line::GuardKilled { .. }
            | Line::Holding { .. }
            | Line::Failed { .. } => {}
        }
    }
}
