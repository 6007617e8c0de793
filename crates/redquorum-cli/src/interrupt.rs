//! SIGINT and SIGTERM for the commands that start local `redis-server`
//! nodes (demo, bench, torture, the mutant sweep). A signal's default
//! action ends the process without its destructors, which are what stop
//! the nodes: a killed torture left its servers and their data dirs
//! behind. So these commands run under [`stoppable`]: on the first signal
//! the command may wrap up on its own (torture says how far it got), within
//! [`GRACE`] and unless a second signal comes; then every server the
//! harness started and has not stopped is killed by pid, its data dir
//! removed (`redquorum_harness::stop_started_servers`), and the process
//! exits with 128 + the signal, as shells report a process killed by it.
//!
//! `exec`, `elect` and the rest do not run under it: they handle their own
//! signals (`exec` forwards them to its command).

use std::future::Future;
use std::process::ExitCode;
use std::sync::LazyLock;
use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::watch;

/// How long a command that listens to [`received`] has to wrap up.
pub(crate) const GRACE: Duration = Duration::from_secs(10);

/// The signal received (its number), 0 until one is.
static RECEIVED: LazyLock<watch::Sender<i32>> = LazyLock::new(|| watch::Sender::new(0));

/// Completes with the signal's number once [`stoppable`] has received
/// SIGINT or SIGTERM: the interrupt a command that wraps up on its own
/// listens to.
pub(crate) async fn received() -> i32 {
    let mut receiver = RECEIVED.subscribe();
    // Only fails if the sender is gone, and it is a static.
    match receiver.wait_for(|&signal| signal != 0).await {
        Ok(signal) => *signal,
        Err(_) => std::future::pending().await,
    }
}

/// The signal [`received`] completed with (0 if none came yet).
pub(crate) fn which() -> i32 {
    *RECEIVED.borrow()
}

/// The status of a process ended by `signal` (130 for SIGINT, 143 for
/// SIGTERM), for a command that wraps up after [`received`].
pub(crate) fn status(signal: i32) -> ExitCode {
    ExitCode::from(u8::try_from(128 + signal).unwrap_or(255))
}

/// The name of `signal`, for messages.
pub(crate) fn name(signal: i32) -> &'static str {
    match signal {
        2 => "SIGINT",
        15 => "SIGTERM",
        _ => "a signal",
    }
}

/// The two signals, listened to for the whole command.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    fn listen() -> std::io::Result<Self> {
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    /// The next of them to arrive: its number.
    async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.interrupt.recv() => SignalKind::interrupt().as_raw_value(),
            _ = self.terminate.recv() => SignalKind::terminate().as_raw_value(),
        }
    }
}

/// Runs `command`; on SIGINT or SIGTERM, gives it `grace` to wrap up (zero
/// for a command that does not listen to [`received`]), then stops every
/// local server left and exits with 128 + the signal. Without a signal
/// handler (the runtime could not install one) the command runs as it would
/// without this.
pub(crate) async fn stoppable(
    command: impl Future<Output = ExitCode>,
    grace: Duration,
) -> ExitCode {
    let mut signals = match Signals::listen() {
        Ok(signals) => signals,
        Err(e) => {
            stderr_line!(
                "redquorum: cannot handle SIGINT and SIGTERM, nodes may outlive them: {e}"
            );
            return command.await;
        }
    };
    tokio::pin!(command);
    let signal = tokio::select! {
        status = &mut command => return status,
        signal = signals.next() => signal,
    };
    RECEIVED.send_replace(signal);
    // Bounded by `grace`; a second signal cuts it short.
    let wrapped_up = !grace.is_zero()
        && tokio::select! {
            _ = &mut command => true,
            () = tokio::time::sleep(grace) => false,
            _ = signals.next() => false,
        };
    let killed = redquorum_harness::stop_started_servers();
    if !wrapped_up || killed > 0 {
        stderr_line!(
            "redquorum: interrupted by {}; stopped {killed} local redis-server(s)",
            name(signal)
        );
    }
    // Now, not by returning: the runtime would wait for blocking tasks of
    // the abandoned command (a nemesis restarting a node, say).
    std::process::exit(128 + signal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_is_reported_as_shells_do() {
        assert_eq!(status(2), ExitCode::from(130));
        assert_eq!(status(15), ExitCode::from(143));
        assert_eq!(name(15), "SIGTERM");
    }
}
