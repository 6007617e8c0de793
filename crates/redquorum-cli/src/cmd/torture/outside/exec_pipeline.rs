//! A pipeline's steps under torture, as a deploy job takes them: `redquorum
//! lock` takes the lock and prints its lease ticket, then `redquorum exec
//! --ticket` adopts it and runs the job's command under it (the command and
//! what it reports are `exec_holder.rs`'s).
//!
//! What is recorded, and why it is honest:
//! - the lock step: a hold granted when `lock` exited with its ticket (its
//!   grant inside it is not visible outside it, and comes before), used for
//!   nothing, and handed over there (its `release`, as a hold the workload
//!   hands over); its owner is the ticket's, its deadline unseen (`lock`
//!   took it in a process of its own). When `lock` printed no ticket, a
//!   refused session whose attempts ran in that process, which tells no
//!   attempt tokens;
//! - the exec step: `exec`'s session, adopted from the ticket's owner
//!   ([`Session::adopted_from`]): the checker then requires the old owner's
//!   keys gone once the adopter is granted (the move took them), and leaves
//!   a hold nobody adopted (the ticket's hold had expired, or the move
//!   failed: `exec` exits 70 and runs nothing) to the leak check.

use std::process::Stdio;

use redquorum::Ticket;
use redquorum_harness::{History, ProtectedStore, Session};

use super::exec_holder::{ExecHolder, Job, ms};
use super::{planted_bug, refusal, refused, unused_hold};

/// The kind the lock step's session is recorded with.
const KIND: &str = "lock";

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
        let start = history.now();
        // Bounded as `exec` is: a step that has not ended by then is
        // killed (dropped with its future) and counted refused, `hung`.
        let locked = tokio::time::timeout(self.ttl * 10, self.lock_step(resource)).await;
        let (code, stdout) = match locked {
            Ok(Some(done)) => done,
            Ok(None) => return vec![refused(KIND, resource, start, "other", history.now())],
            Err(_) => return vec![refused(KIND, resource, start, "hung", history.now())],
        };
        let locked = history.now();
        let ticket = stdout.trim();
        let owner = match (code, ticket.parse::<Ticket>()) {
            (Some(0), Ok(parsed)) => parsed.owner().to_string(),
            _ => return vec![refused(KIND, resource, start, refusal(code), locked)],
        };
        // Handed over when `lock` exited with the ticket.
        let lock = unused_hold(KIND, resource, &owner, start, locked);
        let mut exec = (self.session(resource, history, store, job, Some(ticket))).await;
        exec.adopted_from = Some(owner);
        vec![lock, exec]
    }

    /// Runs `redquorum lock RESOURCE` (waiting up to a TTL, the lock held
    /// for one): its exit status and what it printed (the ticket); `None`
    /// when it could not start.
    async fn lock_step(&self, resource: &str) -> Option<(Option<i32>, String)> {
        let me = std::env::current_exe().ok()?;
        let ttl = ms(self.ttl);
        let mut command = tokio::process::Command::new(&me);
        command
            .args(&self.nodes)
            .arg("lock")
            .args(["--ttl", &ttl, "--wait", &ttl, "--key-prefix", &self.prefix])
            .arg(resource)
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
