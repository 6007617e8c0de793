//! `redquorum exec`: a distributed `flock(1)`. Runs a command while holding
//! the lock (with `-n K`, one of K permits of a semaphore), auto-extended,
//! and maps every outcome to an exit status (docs/cli.md, "Exit status").
//!
//! [`Runner::run`] is the one path that runs a command under a hold, for
//! every kind of hold ([`Hold`]: a lock, a permit, a leadership; `elect`
//! uses it too). The command runs under a guard process (`guard.rs`) so
//! that it, and everything it starts, dies with `redquorum`; when the lease
//! is at risk (`stop_plan.rs`) the whole tree below the guard is stopped
//! before the validity ends (`guarded.rs`). The guard knows the stop times
//! too, renewed after every extension, and stops the tree by itself when
//! `exec` cannot (`stop_times.rs`). The lock is released only when the guard
//! exited, having reaped everything below it; never after the guard was
//! killed (`guarded::Left`).
//! `supervise.rs` waits on the guard, the lease, forwarded signals and an
//! ask to let go (`--on-ask`). `child_env.rs` builds the command's
//! environment, its fencing token asked again while a round finds no quorum.

mod args;
mod child_env;
mod exit_codes;
mod guarded;
mod hold;
mod min_hold;
mod stop_plan;
mod supervise;

use crate::fence_retry::FenceRetry;
pub(crate) use args::{ExecArgs, LeaseArgs};
use child_env::child_env;
use exit_codes::{acquire_exit_code, fence_exit_code};

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use redquorum::{Error, LockOptions, Redlock};

use crate::cmd::common;
use crate::exit;
use crate::nodes_arg::NodesArg;
use crate::stop_times::StopTimes;
use guarded::{GuardEnd, Guarded, Left, Stopped};
use hold::Hold;
use stop_plan::StopPlan;
use supervise::End;

pub(crate) async fn run(nodes: &NodesArg, args: ExecArgs) -> ExitCode {
    let runner = match Runner::new(nodes, &args.lease, "exec") {
        Ok(runner) => runner
            .with_min_hold(args.min_hold)
            .with_on_ask(args.on_ask.map(|signal| (signal, args.ask_grace))),
        Err(code) => return code,
    };
    let redlock = match runner.waiting(args.wait) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let command = &args.command.command;
    let resource = &args.resource;
    let code = match (&args.ticket, args.permits) {
        (Some(ticket), _) => match common::plain_ticket(ticket, "exec") {
            Err(code) => code,
            Ok(ticket) if ticket.resource() != resource => {
                stderr_line!(
                    "redquorum exec: the ticket is for {:?}, not {resource:?}",
                    ticket.resource()
                );
                exit::USAGE.into()
            }
            Ok(ticket) => {
                runner
                    .run_acquired(redlock.adopt(&ticket).await, command)
                    .await
            }
        },
        (None, None) => {
            let lock = match args.wait {
                None => redlock.try_lock(resource).await,
                Some(_) => redlock.lock(resource).await,
            };
            runner.run_acquired(lock, command).await
        }
        (None, Some(permits)) => {
            let semaphore = match redlock.semaphore(resource, permits) {
                Ok(semaphore) => semaphore,
                Err(error) => return runner.not_acquired(&error),
            };
            let permit = match args.wait {
                None => semaphore.try_acquire().await,
                Some(_) => semaphore.acquire().await,
            };
            runner.run_acquired(permit, command).await
        }
    };
    // Returning from `main` would cut short what is still owed to a slow
    // node (a release or an unwind queued behind a call in flight), leaving
    // its key to the TTL there: wait for it, bounded by the node timeout.
    // Every hold is released or forgotten by now, so this releases nothing.
    redlock.shutdown().await;
    code
}

/// What running a command under a hold needs: the checked timing, a
/// `Redlock` whose watchdog carries it out, and how to report.
#[derive(Debug)]
pub(crate) struct Runner {
    redlock: Redlock,
    plan: StopPlan,
    quiet: bool,
    /// The subcommand, for messages: "exec", "elect".
    name: &'static str,
    /// Keep the hold this long after it was acquired (`exec --min-hold`).
    min_hold: Option<Duration>,
    /// Asked to let go: the signal for the command and its grace (`exec --on-ask`).
    on_ask: Option<(Signal, Duration)>,
}

impl Runner {
    /// Checks the timing and builds the `Redlock`; a bad configuration (or
    /// an unreadable `--tls-ca`) is a usage error, reported here.
    pub(crate) fn new(
        nodes: &NodesArg,
        args: &LeaseArgs,
        name: &'static str,
    ) -> Result<Self, ExitCode> {
        let usage = |message: String| {
            stderr_line!("redquorum {name}: {message}");
            ExitCode::from(exit::USAGE)
        };
        let plan = StopPlan::new(args.ttl, args.stop_margin, args.kill_after).map_err(usage)?;
        let urls = common::given_urls(nodes, name)?;
        let mut builder =
            common::builder(&urls, &args.key_prefix, args.tls_ca.as_deref()).map_err(usage)?;
        builder = builder.ttl(args.ttl);
        if let Some(max_ttl) = args.max_ttl {
            builder = builder.max_ttl(max_ttl);
        }
        // The command always gets its token (`REDQUORUM_FENCE`): proposed
        // with the acquire, one round trip before the command starts.
        let redlock = builder
            .build()
            .and_then(|redlock| {
                redlock.with_options(&LockOptions {
                    eager_fence: true,
                    ..*redlock.options()
                })
            })
            .and_then(|redlock| redlock.with_watchdog(&plan.watchdog()))
            .map_err(|e| usage(e.to_string()))?;
        Ok(Self {
            redlock,
            plan,
            quiet: args.quiet,
            name,
            min_hold: None,
            on_ask: None,
        })
    }

    /// Forwards an ask to let go to the command as `signal`, and stops it
    /// `grace` later if it still runs.
    pub(crate) fn with_on_ask(self, on_ask: Option<(Signal, Duration)>) -> Self {
        Self { on_ask, ..self }
    }

    /// Keeps each hold at least `min_hold` after it was acquired.
    pub(crate) fn with_min_hold(self, min_hold: Option<Duration>) -> Self {
        Self { min_hold, ..self }
    }

    /// Whether `--quiet` was given.
    pub(crate) fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// The `Redlock` whose blocking acquires retry for `wait` (the library's
    /// default when not given).
    pub(crate) fn waiting(&self, wait: Option<Duration>) -> Result<Redlock, ExitCode> {
        let Some(wait) = wait else {
            return Ok(self.redlock.clone());
        };
        let options = LockOptions {
            wait,
            ..*self.redlock.options()
        };
        self.redlock.with_options(&options).map_err(|e| {
            stderr_line!("redquorum {}: {e}", self.name);
            ExitCode::from(exit::USAGE)
        })
    }

    /// Runs `command` under the hold if it was acquired; the exit status
    /// for why not otherwise.
    pub(crate) async fn run_acquired<H: Hold>(
        &self,
        acquired: Result<H, Error>,
        command: &[OsString],
    ) -> ExitCode {
        match acquired {
            Ok(hold) => self.run(hold, command).await,
            Err(error) => self.not_acquired(&error),
        }
    }

    /// Reports a failed acquisition; its exit status (docs/cli.md).
    pub(crate) fn not_acquired(&self, error: &Error) -> ExitCode {
        let code = acquire_exit_code(error);
        // A lock held elsewhere is the expected outcome of a cron dedup: not an error.
        if !(self.quiet && code == exit::TEMPFAIL) {
            stderr_line!("redquorum {}: {error}", self.name);
        }
        ExitCode::from(code)
    }

    /// Runs `command` under `hold`, auto-extended: stops it before the
    /// lease ends if the lease is at risk, releases once it has ended.
    pub(crate) async fn run<H: Hold>(&self, mut hold: H, command: &[OsString]) -> ExitCode {
        let name = self.name;
        let acquired = Instant::now();
        // Listened to from now on, so a signal during the command still ends the hold.
        let stop_signals = self.min_hold.and_then(|_| min_hold::StopSignals::listen());
        hold.auto_extend();
        let lease = hold.lease();
        // The acquisition itself may have used up most of the validity.
        if lease.is_at_risk() {
            stderr_line!(
                "redquorum {name}: lease on {:?} (owner {}) at risk as soon as acquired ({:?} left); not running the command",
                hold.resource(),
                hold.owner(),
                lease.validity()
            );
            self.release(hold).await;
            return exit::SOFTWARE.into();
        }
        let retry = FenceRetry {
            delay: self.redlock.options().retry_delay,
            until: acquired + self.redlock.options().ttl,
        };
        let env = match child_env(&hold, retry).await {
            Ok(env) => env,
            Err(error) => {
                stderr_line!(
                    "redquorum {name}: no fencing token for {:?} (owner {}): {error}",
                    hold.resource(),
                    hold.owner()
                );
                self.release(hold).await;
                return ExitCode::from(fence_exit_code(&error));
            }
        };
        let spawned = self
            .stop_times(lease.deadline())
            .and_then(|first| Guarded::spawn(self.name, command, &env, first));
        let mut guarded = match spawned {
            Ok(guarded) => guarded,
            Err(e) => {
                stderr_line!("redquorum {name}: cannot start the command's guard: {e}");
                self.release(hold).await;
                return exit::SOFTWARE.into();
            }
        };
        let supervised = self.supervise(&mut guarded, &lease, hold.release_asked());
        let code = match supervised.await {
            Ok(End::Exited(status)) => exit::shell_status(status.code(), status.signal()),
            Ok(End::AskGraceOver) => {
                stderr_line!(
                    "redquorum {name}: asked to release {:?}, the command did not end in time; stopping it",
                    hold.resource()
                );
                self.stop(&mut guarded, lease.deadline()).await;
                exit::SOFTWARE
            }
            Ok(End::AtRisk(risk)) => {
                stderr_line!(
                    "redquorum {name}: lease on {:?} at risk ({risk}); stopping the command",
                    hold.resource()
                );
                self.stop(&mut guarded, lease.deadline()).await;
                exit::SOFTWARE
            }
            Err(e) => {
                stderr_line!("redquorum {name}: {e}; stopping the command");
                self.stop(&mut guarded, lease.deadline()).await;
                exit::SOFTWARE
            }
        };
        if let Left::Unproven {
            guard,
            killed,
            survivors,
        } = guarded.left_behind().await
        {
            let what = match guard {
                GuardEnd::Killed(signal) => format!(
                    "the command's guard was killed{}; {killed} processes left below it were killed",
                    signal.map_or(String::new(), |sig| format!(" by {sig}"))
                ),
                GuardEnd::Exited => {
                    format!("{killed} processes of the command outlived its guard and were killed")
                }
            };
            let survived = match survivors {
                0 => String::new(),
                n => format!(" ({n} still ran after 5s of SIGKILL)"),
            };
            stderr_line!(
                "redquorum {name}: {what}{survived}. The lease on {:?} is not released: \
                 it is left to expire with its TTL ({:.1?} left)",
                hold.resource(),
                lease.validity()
            );
            hold.forget();
            return exit::SOFTWARE.into();
        }
        if let Some(min_hold) = self.min_hold {
            let resource = hold.resource().to_owned();
            let until = acquired + min_hold;
            min_hold::hold_until(&lease, &resource, until, self.quiet, stop_signals).await;
        }
        self.release(hold).await;
        ExitCode::from(code)
    }

    /// The stop times of `deadline`, for the guard.
    fn stop_times(&self, deadline: Instant) -> std::io::Result<StopTimes> {
        let (term, kill) = self.plan.stop_instants(deadline);
        StopTimes::at(term, kill)
    }

    /// Stops the command's tree: SIGTERM now, SIGKILL per the plan, a slack
    /// before `deadline` at the latest.
    async fn stop(&self, guarded: &mut Guarded, deadline: Instant) {
        let kill_at = self.plan.kill_at(Instant::now(), deadline);
        match guarded.stop(kill_at, deadline).await {
            Stopped::Terminated => {}
            Stopped::Killed if self.quiet => {}
            Stopped::Killed => {
                stderr_line!(
                    "redquorum {}: the command did not end on SIGTERM; it was killed",
                    self.name
                );
            }
            Stopped::TooLate => stderr_line!(
                "redquorum {}: the command's processes did not all end before the lease ran out",
                self.name
            ),
        }
    }

    /// Stops the watchdog (awaiting any extension in flight), then releases.
    async fn release<H: Hold>(&self, hold: H) {
        let resource = hold.resource().to_owned();
        // A lease that is lost or over has nothing left to release: its
        // refusal (not held) says no more than the at-risk message did.
        let expected_refusal = !hold.lease().is_valid();
        if let Err(e) = hold.release().await
            && !self.quiet
            && !(expected_refusal && matches!(e, Error::NotHeld { .. }))
        {
            stderr_line!(
                "redquorum {}: release of {resource:?} failed ({e}); the keys expire with their ttl",
                self.name
            );
        }
    }
}
