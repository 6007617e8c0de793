//! The command under its guard, as `exec` sees it: start the guard (which
//! starts the command, see `guard.rs`), send it the lease's stop times,
//! forward signals to it, stop the whole process tree below it when the
//! lease is at risk, and once the guard is gone, tell whether anything of
//! the command may still run.
//!
//! `exec` makes itself a child subreaper before it starts the guard: if the
//! guard is killed, what ran below it is reparented to `exec` (not to init),
//! and [`Guarded::left_behind`] kills it there. A killed guard proves
//! nothing, though (it died before it could kill and reap the tree), nor do
//! processes found below `exec` once the guard exited (they outlived the
//! guard's SIGKILLs), so `exec` then leaves the lock to its TTL rather than
//! release it.

use std::ffi::OsString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use nix::sys::prctl;
use nix::sys::signal::{self, Signal};
use nix::unistd::{Pid, getpid};
use tokio::process::{Child, Command};

use crate::guard;
use crate::stop_times::{Sender, StopTimes};
use crate::subtree;

/// How long `exec` keeps killing a tree whose guard has not exited: the
/// guard's own bound, so a tree the guard cannot end is not cut short here.
const KILL_FOR: Duration = Duration::from_secs(5);
/// Pause between two of `exec`'s own kill rounds.
const KILL_ROUND_PAUSE: Duration = Duration::from_millis(5);

/// The running guard.
#[derive(Debug)]
pub(crate) struct Guarded {
    child: Child,
    pid: Pid,
    /// Where the lease's new stop times go.
    stop_times: Sender,
}

/// What may be left of the command once the guard is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Left {
    /// Nothing: the guard exited, after killing and reaping everything
    /// below it, and nothing was reparented to `exec`.
    Nothing,
    /// Not proven: the guard was killed (by a signal, if known), or
    /// processes of the command outlived it (ones the guard could not kill
    /// in its 5 s, then reparented to `exec`). `exec` SIGKILLed the `killed`
    /// processes below it; `survivors` still ran after [`KILL_FOR`].
    Unproven {
        guard: GuardEnd,
        killed: usize,
        survivors: usize,
    },
}

/// How the guard ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GuardEnd {
    /// It exited with a status (the command's, or 70).
    Exited,
    /// It was killed, by this signal if known.
    Killed(Option<Signal>),
}

/// How a stop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// Everything ended after SIGTERM, before `kill_at`.
    Terminated,
    /// SIGKILL was needed; everything ended before the lease's deadline.
    Killed,
    /// The guard was still there at the deadline (its processes may have
    /// outlived the lease); it was killed in the end.
    TooLate,
}

impl Guarded {
    /// Starts the guard, which runs `command` with `env` added; its messages
    /// are signed `redquorum <started_by>`.
    ///
    /// Must be called on the main thread: the guard asks for a signal when
    /// the thread that forked it ends (that is what `PR_SET_PDEATHSIG`
    /// watches), and only the main thread lives as long as `redquorum`
    /// (`exec` runs inside the runtime's `block_on`, on the main thread).
    ///
    /// `first` are the stop times of the lease's deadline now: the guard
    /// has them before it starts the command.
    pub(crate) fn spawn(
        started_by: &str,
        command: &[OsString],
        env: &[(&str, String)],
        first: StopTimes,
    ) -> io::Result<Self> {
        if std::thread::current().name() != Some("main") {
            return Err(io::Error::other(
                "the guard must be started from the main thread",
            ));
        }
        // Orphans of a killed guard come to us, within reach (module doc).
        prctl::set_child_subreaper(true)
            .map_err(|e| io::Error::other(format!("cannot become a subreaper: {e}")))?;
        // The read end is inherited by the guard only: no other process is
        // started here, and it is closed below once the guard has it.
        let (stop_times, read_end) = Sender::with_first(first)?;
        // The running binary itself, even if its file was replaced or deleted
        // since (an upgrade while a job runs).
        let child = Command::new("/proc/self/exe")
            .arg0("redquorum")
            .arg(guard::SUBCOMMAND)
            .arg("--parent")
            .arg(std::process::id().to_string())
            .args(["--for", started_by])
            .arg("--stop-times-fd")
            .arg(read_end.as_raw_fd().to_string())
            .arg("--")
            .args(command)
            .envs(env.iter().map(|(name, value)| (name, value)))
            .spawn()?;
        drop(read_end);
        let pid = child
            .id()
            .ok_or_else(|| io::Error::other("the guard exited at once"))?;
        Ok(Self {
            child,
            // Linux pids are at most 2^22, so the cast is exact.
            pid: Pid::from_raw(pid as i32),
            stop_times,
        })
    }

    /// Sends the guard the stop times of the lease's new deadline.
    pub(crate) fn renew(&mut self, times: StopTimes) {
        self.stop_times.send(times);
    }

    /// Sends `sig` to the guard (it forwards SIGINT, SIGTERM and SIGHUP to the command).
    pub(crate) fn send(&self, sig: Signal) {
        // `id()` is None once the guard was reaped: nothing left to signal.
        if self.child.id().is_some() {
            let _ = signal::kill(self.pid, sig);
        }
    }

    /// Waits for the guard to exit; its status is the command's.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe, as `tokio::process::Child::wait` is.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Stops everything below the guard: SIGTERM now, SIGKILL at `kill_at`,
    /// then waits for the guard to exit; `deadline` is the end of the lease.
    pub(crate) async fn stop(&mut self, kill_at: Instant, deadline: Instant) -> Stopped {
        self.send(guard::TERMINATE_TREE);
        if tokio::time::timeout_at(kill_at.into(), self.child.wait())
            .await
            .is_ok()
        {
            return Stopped::Terminated;
        }
        self.send(guard::KILL_TREE);
        let start = Instant::now();
        // Bounded by KILL_FOR. The guard kills the tree too; these rounds are
        // for a guard that is slow to be scheduled on a busy machine.
        while start.elapsed() < KILL_FOR {
            subtree::signal_descendants(self.pid, Signal::SIGKILL);
            if tokio::time::timeout(KILL_ROUND_PAUSE, self.child.wait())
                .await
                .is_ok()
            {
                return if Instant::now() < deadline {
                    Stopped::Killed
                } else {
                    Stopped::TooLate
                };
            }
        }
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        Stopped::TooLate
    }

    /// Once the guard has ended (after [`Self::wait`] or [`Self::stop`]):
    /// whether anything of the command may still run. SIGKILLs in rounds
    /// whatever was reparented to `exec` (nothing, when the guard did its job).
    pub(crate) async fn left_behind(&mut self) -> Left {
        let guard = match self.child.wait().await {
            Ok(status) if status.signal().is_none() => GuardEnd::Exited,
            Ok(status) => GuardEnd::Killed(status.signal().and_then(|n| Signal::try_from(n).ok())),
            Err(_) => GuardEnd::Killed(None),
        };
        let (mut killed, start) = (0, Instant::now());
        // Bounded by KILL_FOR; each round kills what the last one orphaned.
        loop {
            let round = subtree::signal_descendants(getpid(), Signal::SIGKILL);
            killed += round;
            if round == 0 || start.elapsed() > KILL_FOR {
                if guard == GuardEnd::Exited && killed == 0 {
                    return Left::Nothing;
                }
                return Left::Unproven {
                    guard,
                    killed,
                    survivors: round,
                };
            }
            tokio::time::sleep(KILL_ROUND_PAUSE).await;
        }
    }
}
