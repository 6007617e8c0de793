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
use tokio::signal::unix::{SignalKind, signal};

/// Waits until `until` while the watchdog keeps `lock` alive. Returns
/// early, so the caller releases at once, when the lease is at risk or lost
/// (it can no longer promise the window: at once if it already was, since
/// `exec` has said so; otherwise said on stderr unless `quiet`), or on
/// SIGINT, SIGTERM or SIGHUP (an operator stopping the hold).
pub(crate) async fn hold_until(lease: &LeaseWatch, resource: &str, until: Instant, quiet: bool) {
    if Instant::now() >= until || lease.is_at_risk() {
        return;
    }
    let (Ok(mut interrupt), Ok(mut terminate), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        // Without signal handlers an operator could not end the hold: don't hold.
        return;
    };
    tokio::select! {
        () = tokio::time::sleep_until(until.into()) => {}
        risk = lease.at_risk() => {
            if !quiet {
                eprintln!(
                    "redquorum exec: lease on {:?} at risk during --min-hold ({risk}); releasing early",
                    resource
                );
            }
        }
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
        _ = hangup.recv() => {}
    }
}
