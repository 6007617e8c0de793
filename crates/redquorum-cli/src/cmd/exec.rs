//! `redquorum exec`: a distributed `flock(1)`. Runs a command while holding
//! the lock, auto-extended, and maps every outcome to an exit status (DESIGN §6).
//!
//! The command runs under a guard process (`guard.rs`) so that it, and
//! everything it starts, dies with `redquorum`; when the lease is at risk
//! (`stop_plan.rs`) the whole tree below the guard is stopped before the
//! validity ends (`guarded.rs`).

mod guarded;
mod stop_plan;

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use redquorum::{AtRisk, Error, Lock, LockOptions, Redlock};
use tokio::signal::unix::{SignalKind, signal};

use crate::arg_values;
use crate::cmd::common;
use crate::exit;
use crate::guard;
use crate::nodes_arg::NodesArg;
use guarded::{Guarded, Stopped};
use stop_plan::StopPlan;

/// Options of `redquorum exec`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExecArgs {
    /// The lease on each node; the watchdog extends it when half of it is left.
    #[arg(long, default_value = "10s", value_parser = arg_values::positive_duration)]
    ttl: Duration,
    /// How long to keep trying to take the lock, e.g. 500ms, 10s, 2m
    /// [default: one attempt].
    #[arg(long, value_parser = arg_values::duration)]
    wait: Option<Duration>,
    /// Stop the command (SIGTERM) when less validity than this is left and no
    /// extension has succeeded; must be below half the TTL
    /// [default: a quarter of the TTL].
    #[arg(long, value_parser = arg_values::positive_duration)]
    stop_margin: Option<Duration>,
    /// Time between SIGTERM and SIGKILL; with 100ms for the kill to land it
    /// must fit in the stop margin [default: half the stop margin].
    #[arg(long, value_parser = arg_values::duration)]
    kill_after: Option<Duration>,
    /// The longest TTL any client locks with on these nodes: turns on the
    /// delayed-restart rule (a node that is not durable and has been up for
    /// less than this does not vote). Must be at least --ttl [default: off].
    #[arg(long, value_parser = arg_values::positive_duration)]
    max_ttl: Option<Duration>,
    /// Trust this CA certificate (PEM or DER) for rediss:// nodes instead of
    /// the system's roots.
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// The global `--quiet`/`-q` (main.rs): no redquorum messages on stderr
    /// except errors (a lock held elsewhere is not an error: it exits 75 silently).
    #[arg(skip)]
    pub(crate) quiet: bool,
    /// Keep the lock until this long after it was acquired, even when the
    /// command ends sooner (cron: one run per schedule window; see min_hold.rs)
    /// [default: release when the command ends].
    #[arg(long, value_parser = arg_values::duration)]
    min_hold: Option<Duration>,
    /// Prefix of the lock key on each node.
    #[arg(long, default_value = "lock:")]
    key_prefix: String,
    /// The resource to lock.
    #[arg(value_parser = arg_values::non_empty)]
    resource: String,
    #[command(flatten)]
    command: guard::CommandArgs,
}

/// How the command's run ended.
enum End {
    /// The guard exited: the command and everything it started are gone.
    Exited(std::process::ExitStatus),
    /// The lease is at risk or lost: the command must stop now.
    AtRisk(AtRisk),
}

pub(crate) async fn run(nodes: &NodesArg, args: ExecArgs) -> ExitCode {
    let plan = match StopPlan::new(args.ttl, args.stop_margin, args.kill_after) {
        Ok(plan) => plan,
        Err(message) => {
            eprintln!("redquorum exec: {message}");
            return exit::USAGE.into();
        }
    };
    let redlock = match redlock(nodes, &args, &plan) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let mut lock = match acquire(&redlock, &args).await {
        Ok(lock) => lock,
        Err(code) => return code,
    };
    let acquired = Instant::now();
    lock.auto_extend();
    let lease = lock.lease();
    // The acquisition itself may have used up most of the validity.
    if lease.is_at_risk() {
        eprintln!(
            "redquorum exec: lease on {:?} at risk as soon as acquired ({:?} left); not running the command",
            args.resource,
            lease.validity()
        );
        release(lock, args.quiet).await;
        return exit::SOFTWARE.into();
    }
    let env = match child_env(&lock).await {
        Ok(env) => env,
        Err(error) => {
            eprintln!(
                "redquorum exec: no fencing token for {:?}: {error}",
                args.resource
            );
            release(lock, args.quiet).await;
            return ExitCode::from(fence_exit_code(&error));
        }
    };
    let mut guarded = match Guarded::spawn(&args.command.command, &env) {
        Ok(guarded) => guarded,
        Err(e) => {
            eprintln!("redquorum exec: cannot start the command's guard: {e}");
            release(lock, args.quiet).await;
            return exit::SOFTWARE.into();
        }
    };
    let code = match supervise(&mut guarded, lease.at_risk()).await {
        Ok(End::Exited(status)) => exit::shell_status(status.code(), status.signal()),
        Ok(End::AtRisk(risk)) => {
            eprintln!(
                "redquorum exec: lease on {:?} at risk ({risk}); stopping the command",
                args.resource
            );
            stop(&mut guarded, &plan, lease.deadline(), args.quiet).await;
            exit::SOFTWARE
        }
        Err(e) => {
            eprintln!("redquorum exec: {e}; stopping the command");
            stop(&mut guarded, &plan, lease.deadline(), args.quiet).await;
            exit::SOFTWARE
        }
    };
    if let Some(min_hold) = args.min_hold {
        crate::cmd::min_hold::hold_until(&lock, acquired + min_hold, args.quiet).await;
    }
    release(lock, args.quiet).await;
    ExitCode::from(code)
}

/// A `Redlock` on the given nodes with exec's options; a bad configuration
/// (or an unreadable `--tls-ca`) is a usage error.
fn redlock(nodes: &NodesArg, args: &ExecArgs, plan: &StopPlan) -> Result<Redlock, ExitCode> {
    let urls = common::given_urls(nodes, "exec")?;
    let usage = |message: String| {
        eprintln!("redquorum exec: {message}");
        ExitCode::from(exit::USAGE)
    };
    let mut builder =
        common::builder(&urls, &args.key_prefix, args.tls_ca.as_deref()).map_err(usage)?;
    builder = builder.ttl(args.ttl);
    if let Some(max_ttl) = args.max_ttl {
        builder = builder.max_ttl(max_ttl);
    }
    builder
        .build()
        .and_then(|redlock| redlock.with_watchdog(&plan.watchdog()))
        .map_err(|e| usage(e.to_string()))
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
        let code = acquire_exit_code(&error);
        // A lock held elsewhere is the expected outcome of a cron dedup: not an error.
        if !(args.quiet && code == exit::TEMPFAIL) {
            eprintln!("redquorum exec: {error}");
        }
        ExitCode::from(code)
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
async fn child_env(lock: &Lock) -> Result<Vec<(&'static str, String)>, Error> {
    let mut env = vec![("REDQUORUM_RESOURCE", lock.resource().to_owned())];
    // Asked for now: the token's write-back to a quorum (one round trip).
    match lock.fence().await {
        Ok(fence) => env.push(("REDQUORUM_FENCE", fence.to_string())),
        Err(Error::FencingOff { .. }) => {}
        Err(error) => return Err(error),
    }
    Ok(env)
}

/// No token: 70 when the lease was lost before the command could start,
/// 69 when too few nodes took the token (or a fence counter is corrupt);
/// the command never ran.
fn fence_exit_code(error: &Error) -> u8 {
    match error {
        Error::Lost { .. } | Error::NotHeld { .. } => exit::SOFTWARE,
        _ => exit::UNAVAILABLE,
    }
}

/// Waits for the guard, forwarding SIGINT, SIGTERM and SIGHUP to it, until it
/// exits or the lease is at risk.
async fn supervise(
    guarded: &mut Guarded,
    at_risk: impl std::future::Future<Output = AtRisk>,
) -> std::io::Result<End> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    tokio::pin!(at_risk);
    // Bounded by the command's life: every branch but the signal ones ends the loop,
    // and signals arrive only as fast as someone sends them.
    loop {
        let forward = tokio::select! {
            // The risk wins a tie with the guard's exit: the run was not covered to its end.
            biased;
            risk = &mut at_risk => return Ok(End::AtRisk(risk)),
            status = guarded.wait() => return status.map(End::Exited),
            Some(()) = interrupt.recv() => Signal::SIGINT,
            Some(()) = terminate.recv() => Signal::SIGTERM,
            Some(()) = hangup.recv() => Signal::SIGHUP,
        };
        guarded.send(forward);
    }
}

/// Stops the command's tree: SIGTERM now, SIGKILL per the plan, a slack
/// before `deadline` at the latest.
async fn stop(guarded: &mut Guarded, plan: &StopPlan, deadline: Instant, quiet: bool) {
    let kill_at = plan.kill_at(Instant::now(), deadline);
    match guarded.stop(kill_at, deadline).await {
        Stopped::Terminated => {}
        Stopped::Killed if quiet => {}
        Stopped::Killed => {
            eprintln!("redquorum exec: the command did not end on SIGTERM; it was killed");
        }
        Stopped::TooLate => eprintln!(
            "redquorum exec: the command's processes did not all end before the lease ran out"
        ),
    }
}

/// Stops the watchdog (awaiting any extension in flight), then releases.
async fn release(lock: Lock, quiet: bool) {
    let resource = lock.resource().to_owned();
    if let Err(e) = lock.release().await
        && !quiet
    {
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
