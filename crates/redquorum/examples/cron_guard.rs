//! A cron guard: run a job at most once per schedule window, whichever of
//! the hosts runs the same crontab line fires first.
//!
//! ```sh
//! eval "$(redquorum nodes up)"   # or any REDQUORUM_NODES
//! cargo run -p redquorum --example cron_guard -- nightly-report 10m
//! ```
//!
//! A lock released when the job ends only gives "one run at a time": a
//! host whose cron fires a second later than the first host's, after a
//! quick job, would take the free lock and run the job again. So the guard
//! takes the lock with a TTL of the window, keeps it extended while the
//! job runs, and then *forgets* it instead of releasing it: the keys stay
//! until the window has passed since the last extension, and every other
//! host that fires within the window finds the lock taken and skips.
//! (`redquorum exec --min-hold` does the same from the shell.)

use std::time::Duration;

use redquorum::{Error, LockOptions, Redlock};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let job = args.next().unwrap_or_else(|| "nightly-report".to_owned());
    // Longer than the skew between the hosts' clocks and cron's start
    // jitter, shorter than the schedule's period.
    let window = match args.next() {
        Some(text) => parse_window(&text)?,
        None => Duration::from_secs(600),
    };
    let redlock = Redlock::from_env()?;
    let guard = redlock.with_options(&LockOptions {
        ttl: window,
        ..*redlock.options()
    })?;
    let mut lock = match guard.try_lock(&format!("cron:{job}")).await {
        Ok(lock) => lock,
        Err(Error::Contended { .. }) => {
            println!("{job}: skipped, another host ran it in this window");
            return Ok(());
        }
        Err(error) => return Err(error.into()),
    };
    lock.auto_extend();
    let lost = lock.lost();
    tokio::select! {
        result = run_job(&job) => result?,
        reason = lost => return Err(format!("{job}: lock lost mid-run ({reason})").into()),
    }
    // Not release(): the keys keep the window closed to the other hosts.
    lock.forget();
    println!("{job}: ran; the next run can start after {window:?}");
    redlock.shutdown().await;
    Ok(())
}

/// The job itself; here a stand-in.
async fn run_job(job: &str) -> Result<(), Box<dyn std::error::Error>> {
    println!("{job}: running");
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(())
}

/// `90s`, `10m`, `1h`: seconds, minutes or hours.
fn parse_window(text: &str) -> Result<Duration, String> {
    let (number, unit) = text.split_at(text.trim_end_matches(char::is_alphabetic).len());
    let n: u64 = number.parse().map_err(|_| format!("bad window {text:?}"))?;
    match unit {
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err(format!("bad window {text:?}: use s, m or h")),
    }
}
