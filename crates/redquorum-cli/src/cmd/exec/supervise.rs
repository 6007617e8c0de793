//! Supervising a running command (`exec.rs`): the guard's exit, the
//! lease at risk, forwarded signals, renewed stop times, and an ask to let
//! go (`--on-ask`).

use std::time::Duration;

use nix::sys::signal::Signal;
use redquorum::{AtRisk, LeaseWatch};
use tokio::signal::unix::{SignalKind, signal};

use super::Runner;
use super::guarded::Guarded;

/// How often `exec` looks for a deadline moved by an extension, to send the
/// guard its stop times: well inside the time between an extension (half the
/// TTL left) and the stop margin (at most a quarter of it, by default).
const RENEWAL_CHECK: Duration = Duration::from_millis(50);

/// How the command's run ended.
pub(super) enum End {
    /// The guard exited: the command and everything it started are gone.
    Exited(std::process::ExitStatus),
    /// The lease is at risk or lost: the command must stop now.
    AtRisk(AtRisk),
    /// Asked to let go (`--on-ask`), the command did not end within the grace.
    AskGraceOver,
}

impl Runner {
    /// Waits for the guard, forwarding SIGINT, SIGTERM and SIGHUP to it and
    /// sending it the stop times of every new deadline, until it exits or
    /// the lease is at risk. With `--on-ask`, an ask to let go (`asked`) is
    /// forwarded once as its signal, and the grace then runs.
    pub(super) async fn supervise(
        &self,
        guarded: &mut Guarded,
        lease: &LeaseWatch,
        asked: impl std::future::Future<Output = ()>,
    ) -> std::io::Result<End> {
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let mut hangup = signal(SignalKind::hangup())?;
        let mut renewals = tokio::time::interval(RENEWAL_CHECK);
        // After a stall (a stopped `exec`), one look is enough, not a burst.
        renewals.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut sent = lease.deadline();
        let at_risk = lease.at_risk();
        tokio::pin!(at_risk);
        tokio::pin!(asked);
        // Set once asked: when the command's grace ends.
        let mut grace_over: Option<tokio::time::Instant> = None;
        // Bounded by the command's life: every branch but the signal and
        // renewal ones ends the loop; signals arrive only as fast as someone
        // sends them, renewals every RENEWAL_CHECK.
        loop {
            let forward = tokio::select! {
                // The risk wins a tie with the guard's exit: the run was not covered to its end.
                biased;
                risk = &mut at_risk => return Ok(End::AtRisk(risk)),
                status = guarded.wait() => return status.map(End::Exited),
                Some(()) = interrupt.recv() => Signal::SIGINT,
                Some(()) = terminate.recv() => Signal::SIGTERM,
                Some(()) = hangup.recv() => Signal::SIGHUP,
                () = &mut asked, if self.on_ask.is_some() && grace_over.is_none() => {
                    let Some((signal, grace)) = self.on_ask else { continue };
                    grace_over = Some(tokio::time::Instant::now() + grace);
                    if !self.quiet {
                        stderr_line!(
                            "redquorum {}: asked to release the lock; sending {signal} to the command ({} to end)",
                            self.name,
                            humantime::format_duration(grace)
                        );
                    }
                    signal
                }
                () = tokio::time::sleep_until(grace_over.unwrap_or_else(tokio::time::Instant::now)), if grace_over.is_some() => {
                    return Ok(End::AskGraceOver);
                }
                _ = renewals.tick() => {
                    let deadline = lease.deadline();
                    if deadline != sent {
                        sent = deadline;
                        guarded.renew(self.stop_times(deadline)?);
                    }
                    continue;
                }
            };
            guarded.send(forward);
        }
    }
}
