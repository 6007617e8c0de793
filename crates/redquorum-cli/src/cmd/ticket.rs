//! `redquorum lock`, `extend` and `unlock`: a lock held across the steps of
//! a pipeline. `lock` takes it and prints its lease ticket (one line) and
//! exits, leaving it held for its TTL; a later step extends it with the
//! ticket (`Redlock::resume`: the same owner, owner-checked on a quorum) or
//! releases it (`Redlock::release_ticket`: owner-checked on every node). A ticket is a capability: whoever has it can release the
//! lock. It is never printed on stderr.

use std::process::ExitCode;
use std::time::Duration;

use redquorum::{Error, Lock, LockOptions, Redlock};

use crate::arg_values;
use crate::cmd::common;
use crate::exit;
use crate::nodes_arg::NodesArg;

/// Options of `redquorum lock`.
#[derive(Debug, clap::Args)]
pub(crate) struct LockArgs {
    /// How long the lock stays held once this command exits (until a later
    /// `extend` or `unlock`).
    #[arg(long, value_parser = arg_values::positive_duration)]
    ttl: Duration,
    /// How long to wait for a holder to let go (0: one attempt).
    #[arg(long, default_value = "0s", value_parser = arg_values::duration)]
    wait: Duration,
    #[command(flatten)]
    nodes: common::AdminArgs,
    /// The resource to lock.
    #[arg(value_parser = arg_values::non_empty)]
    resource: String,
}

/// Options of `redquorum unlock`, and the ticket of `redquorum extend`.
#[derive(Debug, clap::Args)]
pub(crate) struct TicketArgs {
    #[command(flatten)]
    nodes: common::AdminArgs,
    /// The lease ticket `redquorum lock` printed (or set REDQUORUM_TICKET,
    /// which keeps it out of the process list).
    #[arg(env = "REDQUORUM_TICKET", hide_env_values = true)]
    ticket: String,
}

/// Options of `redquorum extend`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExtendArgs {
    /// How long the lock stays held from now.
    #[arg(long, value_parser = arg_values::positive_duration)]
    ttl: Duration,
    #[command(flatten)]
    ticket: TicketArgs,
}

/// `redquorum lock`: prints the ticket on stdout; 75 when still taken after
/// `--wait`, 69 without a quorum.
pub(crate) async fn lock(nodes: &NodesArg, args: LockArgs) -> ExitCode {
    let redlock = match redlock(nodes, "lock", &args.nodes, args.ttl, args.wait) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let taken = if args.wait.is_zero() {
        redlock.try_lock(&args.resource).await
    } else {
        redlock.lock(&args.resource).await
    };
    let code = match taken {
        Ok(lock) => {
            stderr_line!(
                "redquorum lock: {:?} held for {}; its ticket is on stdout (`redquorum unlock` \
                 releases it)",
                args.resource,
                humantime::format_duration(args.ttl)
            );
            hand_over("lock", lock).await
        }
        Err(error) => {
            stderr_line!("redquorum lock: {:?} not locked: {error}", args.resource);
            failure(&error)
        }
    };
    redlock.shutdown().await;
    code
}

/// Prints `lock`'s ticket on stdout and leaves the hold to it; when the
/// ticket cannot be written (stdout closed or failing), nobody could use
/// or release the hold, so it is released here instead of living on to
/// its TTL, and the exit is 74.
async fn hand_over(command: &str, lock: Lock) -> ExitCode {
    if common::print_line(command, &lock.ticket().to_string()).is_ok() {
        let _left_to_the_ticket = lock.into_ticket();
        return ExitCode::SUCCESS;
    }
    match lock.release().await {
        Ok(_) => stderr_line!("redquorum {command}: the ticket was not written; lock released"),
        Err(error) => stderr_line!(
            "redquorum {command}: the ticket was not written, and the hold may live to its TTL: {error}"
        ),
    }
    exit::IOERR.into()
}

/// `redquorum extend`: renews the ticket's hold for `--ttl` and prints the
/// ticket again (its validity moved on); 70 when the hold is gone (nothing
/// changed), 64 for a malformed ticket.
pub(crate) async fn extend(nodes: &NodesArg, args: ExtendArgs) -> ExitCode {
    with_ticket(
        nodes,
        "extend",
        args.ticket,
        args.ttl,
        |lock, resource| async move {
            // The ticket printed before stays good (the same owner): a
            // failure to print this one leaves the hold as it is.
            let ticket = lock.into_ticket();
            let until = humantime::format_rfc3339_millis(ticket.valid_until());
            stderr_line!("redquorum extend: {resource:?} held until {until}");
            match common::print_line("extend", &ticket.to_string()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(code) => code,
            }
        },
    )
    .await
}

/// `redquorum unlock`: releases the ticket's hold; 70 when it is gone
/// already (nothing removed), 64 for a malformed ticket.
pub(crate) async fn unlock(nodes: &NodesArg, args: TicketArgs) -> ExitCode {
    let ticket = match common::plain_ticket(&args.ticket, "unlock") {
        Ok(ticket) => ticket,
        Err(code) => return code,
    };
    let redlock = match common::admin_redlock(nodes, "unlock", &args.nodes, None) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let resource = ticket.resource();
    // Owner-checked on every node, never renewed first.
    let code = match redlock.release_ticket(&ticket).await {
        Ok(released) => {
            stderr_line!("redquorum unlock: {resource:?} released on {released} nodes");
            ExitCode::SUCCESS
        }
        Err(error @ Error::NotHeld { .. }) => {
            stderr_line!(
                "redquorum unlock: {resource:?} is not held by this ticket any more; nothing changed: {error}"
            );
            failure(&error)
        }
        Err(error) => {
            stderr_line!("redquorum unlock: {resource:?} may still be held: {error}");
            failure(&error)
        }
    };
    redlock.shutdown().await;
    code
}

/// Parses the ticket, resumes its hold (renewed for `ttl`) and runs `then`
/// with it.
async fn with_ticket<F, Fut>(
    nodes: &NodesArg,
    command: &str,
    args: TicketArgs,
    ttl: Duration,
    then: F,
) -> ExitCode
where
    F: FnOnce(Lock, String) -> Fut,
    Fut: std::future::Future<Output = ExitCode>,
{
    let ticket = match common::plain_ticket(&args.ticket, command) {
        Ok(ticket) => ticket,
        Err(code) => return code,
    };
    let redlock = match redlock(nodes, command, &args.nodes, ttl, Duration::ZERO) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let resource = ticket.resource().to_owned();
    let code = match redlock.resume(&ticket).await {
        Ok(lock) => then(lock, resource).await,
        Err(error) => {
            let gone = matches!(error, Error::NotHeld { .. });
            let what = if gone {
                "is not held by this ticket any more; nothing changed"
            } else {
                "may still be held"
            };
            stderr_line!("redquorum {command}: {resource:?} {what}: {error}");
            failure(&error)
        }
    };
    redlock.shutdown().await;
    code
}

/// The `Redlock` of these commands: `ttl` is the lock's, `wait` how long
/// `lock` waits.
fn redlock(
    nodes: &NodesArg,
    command: &str,
    args: &common::AdminArgs,
    ttl: Duration,
    wait: Duration,
) -> Result<Redlock, ExitCode> {
    let redlock = common::admin_redlock(nodes, command, args, Some(ttl))?;
    let options = LockOptions {
        ttl,
        wait,
        ..LockOptions::default()
    };
    redlock.with_options(&options).map_err(|e| {
        stderr_line!("redquorum {command}: {e}");
        ExitCode::from(exit::USAGE)
    })
}

/// The exit status for a failed lock operation (docs/cli.md, "Exit status").
fn failure(error: &Error) -> ExitCode {
    ExitCode::from(match error {
        Error::Contended { .. } | Error::WaitTimeout { .. } => exit::TEMPFAIL,
        Error::Unavailable { .. } => exit::UNAVAILABLE,
        Error::EmptyResource => exit::USAGE,
        _ => exit::SOFTWARE,
    })
}
