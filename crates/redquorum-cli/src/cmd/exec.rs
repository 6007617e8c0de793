//! `redquorum exec`: a distributed `flock(1)`. Runs a command while holding
//! the lock, auto-extended, and maps every outcome to an exit status (DESIGN §6).
//!
//! The command runs under a guard process (`guard.rs`) so that it, and
//! everything it starts, dies with `redquorum`; when the lease is lost the
//! whole tree below the guard is stopped (`guarded.rs`).

mod guarded;

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use redquorum::{Error, Lock, LockOptions, LostReason, Redlock};
use tokio::signal::unix::{SignalKind, signal};

use crate::cmd::common;
use crate::exit;
use crate::nodes_arg::NodesArg;
use guarded::{Guarded, Stopped};

/// Options of `redquorum exec`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExecArgs {
    /// The lease on each node; the watchdog extends it while the command runs.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    ttl: Duration,
    /// How long to keep trying to take the lock, e.g. 500ms, 10s, 2m
    /// [default: one attempt].
    #[arg(long, value_parser = humantime::parse_duration)]
    wait: Option<Duration>,
    /// When the lease is lost: time between SIGTERM and SIGKILL to the command.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    kill_after: Duration,
    /// Prefix of the lock key on each node.
    #[arg(long, default_value = "lock:")]
    key_prefix: String,
    /// The resource to lock.
    resource: String,
    /// The command and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

/// How the command's run ended.
enum End {
    /// The guard exited: the command and everything it started are gone.
    Exited(std::process::ExitStatus),
    /// The lease was lost while the command ran.
    Lost(LostReason),
}

pub(crate) async fn run(nodes: &NodesArg, args: ExecArgs) -> ExitCode {
    let redlock = match common::redlock(nodes, args.ttl, &args.key_prefix) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let mut lock = match acquire(&redlock, &args).await {
        Ok(lock) => lock,
        Err(code) => return code,
    };
    lock.auto_extend();
    let lease = lock.lease();
    let command: Vec<OsString> = args.command.iter().map(OsString::from).collect();
    let mut guarded = match Guarded::spawn(&command, &child_env(&lock)) {
        Ok(guarded) => guarded,
        Err(e) => {
            eprintln!("redquorum exec: cannot start the command's guard: {e}");
            release(lock).await;
            return exit::SOFTWARE.into();
        }
    };
    let code = match supervise(&mut guarded, lease.lost()).await {
        Ok(End::Exited(status)) => exit::shell_status(status.code(), status.signal()),
        Ok(End::Lost(reason)) => {
            eprintln!(
                "redquorum exec: lease on {:?} lost ({reason}); terminating the command",
                args.resource
            );
            stop(&mut guarded, args.kill_after, lease.deadline()).await;
            exit::SOFTWARE
        }
        Err(e) => {
            eprintln!("redquorum exec: {e}; terminating the command");
            stop(&mut guarded, args.kill_after, lease.deadline()).await;
            exit::SOFTWARE
        }
    };
    release(lock).await;
    ExitCode::from(code)
}

/// One attempt by default; with `--wait`, retries until it runs out.
async fn acquire(redlock: &Redlock, args: &ExecArgs) -> Result<Lock, ExitCode> {
    let attempt = match args.wait {
        None => redlock.try_lock(&args.resource).await,
        Some(wait) => {
            let options = LockOptions {
                wait,
                ..*redlock.options()
            };
            match redlock.with_options(&options) {
                Ok(waiting) => waiting.lock(&args.resource).await,
                Err(e) => {
                    eprintln!("redquorum exec: {e}");
                    return Err(exit::USAGE.into());
                }
            }
        }
    };
    attempt.map_err(|error| {
        eprintln!("redquorum exec: {error}");
        ExitCode::from(acquire_exit_code(&error))
    })
}

/// 69 when too few nodes answered (also as the last error of a wait), 75 when
/// the lock is busy or came too late, 64 for a bad resource.
fn acquire_exit_code(error: &Error) -> u8 {
    match error {
        Error::Unavailable { .. } => exit::UNAVAILABLE,
        Error::Contended { .. } | Error::Expired { .. } => exit::TEMPFAIL,
        Error::WaitTimeout { last, .. } => match **last {
            Error::Unavailable { .. } => exit::UNAVAILABLE,
            _ => exit::TEMPFAIL,
        },
        Error::EmptyResource => exit::USAGE,
        _ => exit::SOFTWARE,
    }
}

/// The command's environment: the resource, and the fencing token for
/// commands that write to a resource checking it.
fn child_env(lock: &Lock) -> Vec<(&'static str, String)> {
    let mut env = vec![("REDQUORUM_RESOURCE", lock.resource().to_owned())];
    if let Some(fence) = lock.fence() {
        env.push(("REDQUORUM_FENCE", fence.to_string()));
    }
    env
}

/// Waits for the guard, forwarding SIGINT, SIGTERM and SIGHUP to it, until it
/// exits or the lease is lost.
async fn supervise(
    guarded: &mut Guarded,
    lost: impl std::future::Future<Output = LostReason>,
) -> std::io::Result<End> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    tokio::pin!(lost);
    // Bounded by the command's life: every branch but the signal ones ends the loop,
    // and signals arrive only as fast as someone sends them.
    loop {
        let forward = tokio::select! {
            // A lost lease wins a tie with the guard's exit: the run was not covered to its end.
            biased;
            reason = &mut lost => return Ok(End::Lost(reason)),
            status = guarded.wait() => return status.map(End::Exited),
            Some(()) = interrupt.recv() => Signal::SIGINT,
            Some(()) = terminate.recv() => Signal::SIGTERM,
            Some(()) = hangup.recv() => Signal::SIGHUP,
        };
        guarded.send(forward);
    }
}

/// Stops the command's tree: SIGTERM now, SIGKILL after `grace`.
async fn stop(guarded: &mut Guarded, grace: Duration, deadline: Instant) {
    match guarded.stop(Instant::now() + grace, deadline).await {
        Stopped::Terminated => {}
        Stopped::Killed => {
            eprintln!("redquorum exec: the command ignored SIGTERM for {grace:?}; it was killed");
        }
        Stopped::TooLate => eprintln!(
            "redquorum exec: the command's processes did not all end before the lease ran out"
        ),
    }
}

/// Stops the watchdog (awaiting any extension in flight), then releases.
async fn release(lock: Lock) {
    let resource = lock.resource().to_owned();
    if let Err(e) = lock.release().await {
        eprintln!(
            "redquorum exec: release of {resource:?} failed ({e}); the keys expire with their ttl"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_errors_map_to_the_contract() {
        assert_eq!(acquire_exit_code(&Error::EmptyResource), exit::USAGE);
        let expired = Error::Expired {
            resource: "r".into(),
            elapsed: Duration::from_secs(1),
            ttl: Duration::from_secs(1),
        };
        assert_eq!(acquire_exit_code(&expired), exit::TEMPFAIL);
        let waited = Error::WaitTimeout {
            resource: "r".into(),
            waited: Duration::from_secs(1),
            last: Box::new(expired),
        };
        assert_eq!(acquire_exit_code(&waited), exit::TEMPFAIL);
    }
}
