//! A pipeline's steps under torture, as a deploy job takes them: `redquorum
//! lock` takes the lock and prints its lease ticket, then either `redquorum
//! exec --ticket` adopts it and runs the job's command under it (the
//! command and what it reports are `exec_holder.rs`'s), or the job's own
//! steps hold it: `redquorum extend TICKET` (half the time), a pause, and
//! `redquorum unlock TICKET`.
//!
//! What is recorded, and why it is honest:
//! - the lock step: a hold granted when `lock` exited with its ticket (its
//!   grant inside it is not visible outside it, and comes before). Before
//!   `exec`, used for nothing, and handed over there (its `release`, as a
//!   hold the workload hands over); its owner is the ticket's, its deadline
//!   unseen (`lock` took it in a process of its own). When `lock` printed
//!   no ticket, a refused session whose attempts ran in that process,
//!   which tells no attempt tokens;
//! - the exec step: `exec`'s session, adopted from the ticket's owner
//!   ([`Session::adopted_from`]): the checker then requires the old owner's
//!   keys gone once the adopter is granted (the move took them), and leaves
//!   a hold nobody adopted (the ticket's hold had expired, or the move
//!   failed: `exec` exits 70 and runs nothing) to the leak check;
//! - the job's own steps: one session, held from `lock`'s exit to the
//!   deadline its ticket says (Unix ms, rounded down: the lock's own
//!   deadline, on the host's wall clock, read against the history's clock
//!   at once); an `extend` that exited 0 adds an extension from when it
//!   started to the deadline its ticket says; an `unlock` releases it from
//!   when it started, whatever it says (it removes the ticket's hold
//!   wherever it finds it, even when too few nodes answer). Half the
//!   unlocks come a quarter TTL after the deadline: the hold is gone (exit
//!   70), and nothing else may be removed then.

use std::process::Stdio;

use std::time::{Duration, SystemTime};

use redquorum::Ticket;
use redquorum_harness::{Extension, History, Outcome, ProtectedStore, Session};

use super::exec_holder::{ExecHolder, Job, ms};
use super::{planted_bug, refusal, refused, unused_hold};

/// The kind the lock step's session, and the job's steps', are recorded with.
const KIND: &str = "lock";

/// What `redquorum lock` gave: the ticket it printed, and when it started and exited.
struct Locked {
    start: Duration,
    at: Duration,
    text: String,
    ticket: Ticket,
}

/// How the job's own steps hold the ticket's lock.
#[derive(Debug, Clone, Copy)]
pub(super) struct Steps {
    /// `redquorum extend TICKET` right after `lock`.
    pub(super) extend: bool,
    /// `redquorum unlock TICKET` a quarter TTL after the deadline.
    pub(super) late: bool,
}

impl ExecHolder {
    /// The two steps' sessions: `lock`'s, then (when it printed a ticket)
    /// the adopting `exec`'s, whose command does `job`.
    pub(super) async fn pipeline(
        &self,
        resource: &str,
        history: &History,
        store: &ProtectedStore,
        job: Job,
    ) -> Vec<Session> {
        let locked = match self.locked(resource, history).await {
            Ok(locked) => locked,
            Err(refused) => return vec![refused],
        };
        let owner = locked.ticket.owner().to_string();
        // Handed over when `lock` exited with the ticket.
        let lock = unused_hold(KIND, resource, &owner, locked.start, locked.at);
        let ticket = Some(locked.text.as_str());
        let mut exec = (self.session(resource, history, store, job, ticket)).await;
        exec.adopted_from = Some(owner);
        vec![lock, exec]
    }

    /// `lock`'s session, then the job's own steps on its ticket (see the
    /// module's doc): one session, held from `lock`'s exit.
    pub(super) async fn ticket_steps(
        &self,
        resource: &str,
        history: &History,
        Steps { extend, late }: Steps,
    ) -> Vec<Session> {
        let (start, locked, text, ticket) = match self.locked(resource, history).await {
            Ok(Locked {
                start,
                at,
                text,
                ticket,
            }) => (start, at, text, ticket),
            Err(refused) => return vec![refused],
        };
        let (owner, deadline) = (ticket.owner().to_string(), deadline_of(&ticket, history));
        let ticket = text.as_str();
        let grant = locked.min(deadline);
        let mut session = Session::granted(0, resource, &owner, start, grant, deadline);
        session.kind = KIND.to_owned();
        (session.write_start, session.write_end, session.release) = (None, None, None);
        session.outcome = Outcome::Abandoned;
        // Extended only well inside the lease.
        let ttl = ms(self.ttl);
        if extend && history.now() + self.ttl / 4 < deadline {
            let at = history.now();
            let args = [
                "extend",
                "--ttl",
                &ttl,
                "--key-prefix",
                &self.prefix,
                ticket,
            ];
            let extended = tokio::time::timeout(self.ttl * 10, self.step(&args)).await;
            if let Ok(Some((Some(0), printed))) = extended
                && let Ok(renewed) = printed.trim().parse::<Ticket>()
            {
                session.renewed.push(history.now());
                let until = deadline_of(&renewed, history);
                session.extensions.push(Extension { at, until });
            }
        }
        let until = session.extensions.last().map_or(deadline, |e| e.until);
        let work = if late {
            until.saturating_sub(history.now()) + self.ttl / 4
        } else {
            self.ttl / 4
        };
        tokio::time::sleep(work).await;
        let at = history.now();
        let args = ["unlock", "--key-prefix", &self.prefix, ticket];
        // Whatever it says: it removes the ticket's hold wherever it finds it.
        let _ = tokio::time::timeout(self.ttl * 10, self.step(&args)).await;
        session.release = Some(at.max(grant));
        vec![session]
    }

    /// The lock step: its ticket, or the refused session it was.
    async fn locked(&self, resource: &str, history: &History) -> Result<Locked, Session> {
        let start = history.now();
        // Bounded as `exec` is: a step that has not ended by then is
        // killed (dropped with its future) and counted refused, `hung`.
        let stepped = tokio::time::timeout(self.ttl * 10, self.lock_step(resource)).await;
        let (code, stdout) = match stepped {
            Ok(Some(done)) => done,
            Ok(None) => return Err(refused(KIND, resource, start, "other", history.now())),
            Err(_) => return Err(refused(KIND, resource, start, "hung", history.now())),
        };
        let at = history.now();
        let text = stdout.trim().to_owned();
        match (code, text.parse::<Ticket>()) {
            (Some(0), Ok(ticket)) => Ok(Locked {
                start,
                at,
                text,
                ticket,
            }),
            _ => Err(refused(KIND, resource, start, refusal(code), at)),
        }
    }

    /// Runs `redquorum lock RESOURCE` (waiting up to a TTL, the lock held
    /// for one): its exit status and what it printed (the ticket); `None`
    /// when it could not start.
    async fn lock_step(&self, resource: &str) -> Option<(Option<i32>, String)> {
        let ttl = ms(self.ttl);
        let args = [
            "lock",
            "--ttl",
            &ttl,
            "--wait",
            &ttl,
            "--key-prefix",
            &self.prefix,
            resource,
        ];
        self.step(&args).await
    }

    /// Runs this binary with the group's nodes and `args`: its exit status
    /// and what it printed; `None` when it could not start.
    async fn step(&self, args: &[&str]) -> Option<(Option<i32>, String)> {
        let me = std::env::current_exe().ok()?;
        let mut command = tokio::process::Command::new(&me);
        command
            .args(&self.nodes)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        planted_bug(command.as_std_mut());
        let output = command.output().await.ok()?;
        let printed = String::from_utf8_lossy(&output.stdout).into_owned();
        Some((output.status.code(), printed))
    }
}

/// The deadline `ticket` says, on the history's clock: its Unix ms (rounded
/// down, so never later than the lock's) less the wall clock now, from now.
fn deadline_of(ticket: &Ticket, history: &History) -> Duration {
    let left = (ticket.valid_until())
        .duration_since(SystemTime::now())
        .unwrap_or_default();
    history.now() + left
}
