//! `exec --min-hold D`: keep the lock until `D` after it was acquired, even
//! when the command ends sooner.
//!
//! A lock alone gives "one run at a time", not "one run per schedule": a job
//! that takes 200 ms on host A is over before host B's cron (its clock a
//! second behind) fires, and B runs it again. Holding the lock for a window
//! after the run makes every host that fires within that window find it
//! taken (exit 75). The lock stays owner-checked and auto-extended while
//! held, so a crashed `exec` still frees it within the TTL.

use std::time::Instant;

use redquorum::LeaseWatch;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The signals that end a `--min-hold` early, listened to from before the
/// command starts: one that arrives while the command runs or ends is not
/// lost (a listener registered later would not see it).
pub(crate) struct StopSignals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl StopSignals {
    /// Starts listening; `None` if a handler cannot be installed.
    pub(crate) fn listen() -> Option<Self> {
        Some(Self {
            interrupt: signal(SignalKind::interrupt()).ok()?,
            terminate: signal(SignalKind::terminate()).ok()?,
            hangup: signal(SignalKind::hangup()).ok()?,
        })
    }
}

/// Waits until `until` while the watchdog keeps the hold alive. Returns
/// early, so the caller releases at once, when the lease is at risk or lost
/// (it can no longer promise the window: at once if it already was, since
/// `exec` has said so; otherwise said on stderr unless `quiet`), or on
/// SIGINT, SIGTERM or SIGHUP (an operator stopping the hold), also one that
/// came while the command ran. Without `signals` (no handler could be
/// installed) it does not hold: an operator could not end the hold.
pub(crate) async fn hold_until(
    lease: &LeaseWatch,
    resource: &str,
    until: Instant,
    quiet: bool,
    signals: Option<StopSignals>,
) {
    let Some(mut signals) = signals else {
        return;
    };
    if Instant::now() >= until || lease.is_at_risk() {
        return;
    }
    tokio::select! {
        () = tokio::time::sleep_until(until.into()) => {}
        risk = lease.at_risk() => {
            if !quiet {
                stderr_line!(
                    "redquorum exec: lease on {resource:?} at risk during --min-hold ({risk}); releasing early"
                );
            }
        }
        _ = signals.interrupt.recv() => {}
        _ = signals.terminate.recv() => {}
        _ = signals.hangup.recv() => {}
    }
}
