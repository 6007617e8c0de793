//! `redquorum exec`: a distributed `flock(1)`. Runs a command while holding
//! the lock, auto-extended, and maps every outcome to an exit status (DESIGN §6).

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus};
use std::time::Duration;

use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;
use redquorum::{Error, Lock, LockOptions, LostReason, Redlock};
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};

use crate::cmd::common;
use crate::exit;
use crate::nodes_arg::NodesArg;

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

/// How the child's run ended.
enum End {
    Exited(std::io::Result<ExitStatus>),
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
    let lost = lock.lost();

    let mut command = Command::new(&args.command[0]);
    command
        .args(&args.command[1..])
        .env("REDQUORUM_RESOURCE", &args.resource);
    // The fencing token, for children that write to a resource checking it.
    match lock.fence().await {
        Ok(fence) => {
            command.env("REDQUORUM_FENCE", fence.to_string());
        }
        Err(Error::FencingOff { .. }) => {}
        Err(error) => {
            eprintln!("redquorum exec: no fencing token: {error}");
            release(lock).await;
            return ExitCode::from(exit::UNAVAILABLE);
        }
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("redquorum exec: cannot run {:?}: {e}", args.command[0]);
            release(lock).await;
            // As shells do: 127 not found, 126 found but not runnable.
            return if e.kind() == std::io::ErrorKind::NotFound {
                ExitCode::from(127)
            } else {
                ExitCode::from(126)
            };
        }
    };

    let end = match supervise(&mut child, lost).await {
        Ok(end) => end,
        Err(e) => {
            eprintln!("redquorum exec: cannot watch signals: {e}");
            terminate(&mut child, args.kill_after).await;
            release(lock).await;
            return exit::SOFTWARE.into();
        }
    };
    match end {
        End::Exited(Ok(status)) => {
            release(lock).await;
            ExitCode::from(status_code(status))
        }
        End::Exited(Err(e)) => {
            eprintln!("redquorum exec: waiting for the command failed: {e}");
            terminate(&mut child, args.kill_after).await;
            release(lock).await;
            exit::SOFTWARE.into()
        }
        End::Lost(reason) => {
            eprintln!(
                "redquorum exec: lease on {:?} lost ({reason}); terminating the command",
                args.resource
            );
            terminate(&mut child, args.kill_after).await;
            release(lock).await;
            exit::SOFTWARE.into()
        }
    }
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

/// Waits for the child, forwarding SIGINT, SIGTERM and SIGHUP to it, until it
/// exits or the lease is lost.
async fn supervise(
    child: &mut Child,
    lost: impl std::future::Future<Output = LostReason>,
) -> std::io::Result<End> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    tokio::pin!(lost);
    // Bounded by the child's life: every branch but the signal ones ends the loop,
    // and signals arrive only as fast as someone sends them.
    loop {
        let forward = tokio::select! {
            // A lost lease wins a tie with the child's exit: the run was not covered to its end.
            biased;
            reason = &mut lost => return Ok(End::Lost(reason)),
            status = child.wait() => return Ok(End::Exited(status)),
            Some(()) = interrupt.recv() => Signal::SIGINT,
            Some(()) = terminate.recv() => Signal::SIGTERM,
            Some(()) = hangup.recv() => Signal::SIGHUP,
        };
        send(child, forward);
    }
}

/// SIGTERM, then SIGKILL if the child is still there after `grace`; reaps it.
async fn terminate(child: &mut Child, grace: Duration) {
    send(child, Signal::SIGTERM);
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        eprintln!("redquorum exec: the command ignored SIGTERM for {grace:?}; sending SIGKILL");
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
}

fn send(child: &Child, sig: Signal) {
    // `id()` is None once the child was reaped: nothing left to signal.
    let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
        return;
    };
    if let Err(e) = signal::kill(Pid::from_raw(pid), sig) {
        eprintln!("redquorum exec: cannot send {sig} to the command: {e}");
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

/// The child's exit code, or 128 + the signal that killed it, as shells report it.
fn status_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(255),
        (None, None) => exit::SOFTWARE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command as StdCommand;

    fn status_of(script: &str) -> ExitStatus {
        StdCommand::new("sh")
            .args(["-c", script])
            .status()
            .expect("sh runs")
    }

    #[test]
    fn exit_codes_pass_through_and_signals_become_128_plus_n() {
        assert_eq!(status_code(status_of("exit 0")), 0);
        assert_eq!(status_code(status_of("exit 3")), 3);
        assert_eq!(status_code(status_of("kill -TERM $$")), 128 + 15);
    }

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
