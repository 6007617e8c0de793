//! The torture's holders in other processes, which the default run's last
//! client group locks through now and then beside the library
//! (`group_locker.rs`): a shell user's `redquorum exec`
//! (`outside/exec_holder.rs`, the command it runs `exec_hold.rs`, what they
//! say `exec_lines.rs` and `exec_left.rs`), a deploy pipeline's `redquorum
//! lock` then `exec --ticket` (`outside/exec_pipeline.rs`), and an HTTP client of
//! `redquorum serve` (`outside/serve_holder.rs`). What they share: how a
//! refused attempt of another process is recorded, and the planted bug
//! they pass on.

pub(crate) mod exec_hold;
pub(crate) mod exec_holder;
mod exec_left;
mod exec_lines;
mod exec_pipeline;
pub(crate) mod serve_holder;

use std::time::Duration;

use redquorum_harness::{Outcome, Session};

/// A session of `kind` that another process was refused, its attempt
/// `ended` when the torture learned so. Its attempts ran in that process,
/// which tells no attempt tokens and ended or answered with its unwinds
/// (`Session::deadline_unseen`): the orphan rule measures a never-granted
/// key's life from the ends of the refused attempts that may have set it.
fn refused(kind: &str, resource: &str, start: Duration, why: &str, ended: Duration) -> Session {
    let mut session = Session::refused(0, resource, start, why);
    session.kind = kind.to_owned();
    session.deadline_unseen = true;
    session.ended = Some(ended);
    session
}

/// A hold another process took and used for nothing, until `at` (when
/// that process exited or handed it over): a session that claims no
/// time, recorded so that its keys have an owner, its deadline unseen
/// (that process kept it).
fn unused_hold(kind: &str, resource: &str, owner: &str, start: Duration, at: Duration) -> Session {
    let mut session = Session::granted(0, resource, owner, start, at, at);
    session.kind = kind.to_owned();
    session.deadline_unseen = true;
    (session.write_start, session.write_end) = (None, None);
    session.outcome = Outcome::Abandoned;
    session.ended = Some(at);
    session
}

/// Why a command of this binary that took no lock was refused, by its
/// exit status (75 still held after its wait, 69 too few nodes).
fn refusal(code: Option<i32>) -> &'static str {
    match code {
        Some(75) => "contended",
        Some(69) => "unavailable",
        _ => "other",
    }
}

/// The seeded draws of a holder group in another process: `None` for the
/// sessions that do not go through it (all but one in `one_in`), else the
/// generator, to draw how this one holds.
fn drawn(
    rng: &std::sync::Mutex<rand::rngs::StdRng>,
    one_in: u32,
) -> Option<std::sync::MutexGuard<'_, rand::rngs::StdRng>> {
    use rand::Rng;
    let mut rng = rng
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    (rng.gen_range(0..one_in) == 0).then_some(rng)
}

/// In a planted-bug build, the variable that plants the torture's bug in
/// the `exec` or `serve` it starts (`main.rs`).
#[cfg(redquorum_mutants)]
pub(crate) const MUTANT_ENV: &str = "REDQUORUM_TORTURE_MUTANT";

/// In a planted-bug build, the process `command` starts runs with the
/// torture's planted bug.
#[cfg(redquorum_mutants)]
fn planted_bug(command: &mut std::process::Command) {
    if let Some(mutant) = redquorum::mutants::active() {
        command.env(MUTANT_ENV, mutant.name());
    }
}

#[cfg(not(redquorum_mutants))]
fn planted_bug(_command: &mut std::process::Command) {}
