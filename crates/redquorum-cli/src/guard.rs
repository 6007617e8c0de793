//! The guard: a small process between `redquorum exec` and its command, so
//! that nothing the command started outlives the lock, even when `redquorum`
//! itself is killed with SIGKILL.
//!
//! `exec` (or `elect`) starts it as `redquorum __guard --parent PID --for
//! exec -- CMD [ARGS...]` (the same binary). The guard:
//!
//! - blocks the signals it handles and reads them from a signalfd, so none is
//!   lost between two reads; the command starts with an empty signal mask
//!   (posix_spawn's attributes: std's `Command` would pass the guard's mask
//!   on, as seen with Rust 1.95) and SIGPIPE at its default action;
//! - makes itself a child subreaper, so every orphan below it (a daemonized
//!   grandchild, a background job whose shell exited) is reparented to it and
//!   stays in reach;
//! - asks for [`KILL_TREE`] when its parent dies (`PR_SET_PDEATHSIG`), then
//!   checks that its parent is still the `exec` that started it, which closes
//!   the race of a parent that died before the request was made;
//! - starts the command with the guard's stdio, environment and process group
//!   (so an interactive command keeps the terminal);
//! - forwards SIGINT, SIGTERM and SIGHUP to the command, except copies the
//!   kernel sent to the whole foreground process group (a Ctrl-C at the
//!   terminal): the command got its own copy of those;
//! - on [`TERMINATE_TREE`] sends SIGTERM to every process below it, and on
//!   [`KILL_TREE`] (from `exec`, or its parent's death) SIGKILLs them all in
//!   rounds until none is left;
//! - keeps the lease's stop times that `exec` sends after every extension
//!   (`stop_times.rs`) and, when one passes with no later one received,
//!   SIGTERMs then SIGKILLs every process below it on its own, and exits 70:
//!   a stopped or starved `exec` costs the command its run, never the lock
//!   its safety. The end of that pipe (`exec` gone) is a [`KILL_TREE`] too;
//! - when the command exits, SIGKILLs whatever it left running below the
//!   guard, then exits with the command's status (its code, or 128 + the
//!   signal that killed it). `exec` releases the lock only after that, so
//!   nothing runs unprotected; and only when the guard exited, not when it
//!   was killed (then `exec` kills what the guard left, and leaves the lock
//!   to its TTL: see `cmd/exec/guarded.rs`).

use std::ffi::OsString;
use std::os::fd::{AsFd, RawFd};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::libc;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::prctl;
use nix::sys::signal::{self, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpid, getppid};

use crate::exit;
use crate::stop_times::{self, Received, Receiver, StopTimes};
use crate::subtree;

mod spawn;

use spawn::spawn;

/// The hidden subcommand that runs the guard.
pub(crate) const SUBCOMMAND: &str = "__guard";
/// Sent by `exec` to the guard: SIGTERM every process below you.
pub(crate) const TERMINATE_TREE: Signal = Signal::SIGUSR2;
/// Sent by `exec`, and by the kernel when `exec` dies: SIGKILL every process
/// below you, then exit.
pub(crate) const KILL_TREE: Signal = Signal::SIGUSR1;

/// How long the guard keeps killing a subtree that will not go away (a
/// process stuck in the kernel cannot die until its I/O ends).
const KILL_FOR: Duration = Duration::from_secs(5);
/// Bound on kill rounds within [`KILL_FOR`].
const MAX_KILL_ROUNDS: u32 = 5_000;
/// Pause between two kill rounds, for the kernel to finish the killed processes.
const KILL_ROUND_PAUSE: Duration = Duration::from_millis(1);

/// Arguments of the hidden `__guard` subcommand (exec builds them).
#[derive(Debug, clap::Args)]
pub(crate) struct GuardArgs {
    /// The pid of the `redquorum exec` that started this guard.
    #[arg(long)]
    parent: i32,
    /// The subcommand that started it (`exec`, `elect`), named in its messages.
    #[arg(long = "for", default_value = "exec")]
    started_by: String,
    /// The inherited read end of the pipe on which `exec` sends the lease's
    /// stop times (stop_times.rs); its first line is there already.
    #[arg(long)]
    stop_times_fd: RawFd,
    #[command(flatten)]
    command: CommandArgs,
}

/// The command to run and its arguments, as `exec` and the guard take them.
#[derive(Debug, clap::Args)]
pub(crate) struct CommandArgs {
    /// The command and its arguments (after `--`), passed through byte for byte.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_parser = clap::value_parser!(OsString)
    )]
    pub(crate) command: Vec<OsString>,
}

/// Runs the guard to its end; the exit status is the command's.
pub(crate) fn run(args: &GuardArgs) -> ExitCode {
    let name = &args.started_by;
    let signals = match set_up(args.parent) {
        Ok(signals) => signals,
        Err(message) => {
            stderr_line!("redquorum {name}: {message}; not running the command");
            return exit::SOFTWARE.into();
        }
    };
    let (mut stop_times, first) = match first_stop_times(args.stop_times_fd) {
        Ok(received) => received,
        Err(e) => {
            stderr_line!(
                "redquorum {name}: no stop time for the lease from redquorum ({e}); not running the command"
            );
            return exit::SOFTWARE.into();
        }
    };
    let command = match spawn(&args.command.command, args.stop_times_fd) {
        Ok(pid) => pid,
        Err((program, e)) => {
            stderr_line!("redquorum {name}: cannot run {program:?}: {}", e.desc());
            // As shells do: 127 not found, 126 found but not runnable.
            return ExitCode::from(if e == Errno::ENOENT { 127 } else { 126 });
        }
    };
    let mut guard = Guard {
        name,
        command,
        status: None,
        stop: first,
        stopping: false,
    };
    ExitCode::from(guard.supervise(&signals, &mut stop_times))
}

/// Opens the stop-times pipe and reads the first stop times, which `exec`
/// wrote before starting the guard.
fn first_stop_times(fd: RawFd) -> std::io::Result<(Receiver, StopTimes)> {
    let mut receiver = Receiver::open(fd)?;
    match receiver.read()? {
        Received::Latest(Some(first)) => Ok((receiver, first)),
        Received::Latest(None) => Err(std::io::Error::other("the pipe is empty")),
        Received::Closed => Err(std::io::Error::other("redquorum exited")),
    }
}

/// Blocks the guard's signals, becomes a subreaper, asks for [`KILL_TREE`] on
/// the parent's death and checks the parent is still there.
fn set_up(parent: i32) -> Result<SignalFd, String> {
    let mut handled = SigSet::empty();
    for sig in [
        Signal::SIGCHLD,
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        TERMINATE_TREE,
        KILL_TREE,
    ] {
        handled.add(sig);
    }
    // Blocked first: from here on these signals wait in the signalfd instead
    // of ending the guard. (One arriving before this line ends the guard with
    // its default action, before the command exists: nothing is left behind.)
    handled
        .thread_block()
        .map_err(|e| format!("cannot block signals: {e}"))?;
    let signals = SignalFd::with_flags(&handled, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("cannot read signals: {e}"))?;
    prctl::set_child_subreaper(true).map_err(|e| format!("cannot become a subreaper: {e}"))?;
    prctl::set_pdeathsig(KILL_TREE)
        .map_err(|e| format!("cannot ask for a signal on redquorum's death: {e}"))?;
    // The parent may have died before set_pdeathsig: then no signal will come,
    // and we have been reparented already.
    if getppid() != Pid::from_raw(parent) {
        return Err("redquorum exited before the command started".to_owned());
    }
    Ok(signals)
}

/// The command's pid, its status once reaped, and when to stop it.
struct Guard<'a> {
    /// The subcommand that started the guard, for its messages.
    name: &'a str,
    command: Pid,
    status: Option<u8>,
    /// The last stop times `exec` sent.
    stop: StopTimes,
    /// The tree got its SIGTERM (at `stop.term_at`, or from `exec`): later
    /// stop times no longer count, no second SIGTERM is sent, and the guard
    /// exits 70.
    stopping: bool,
}

/// What to do after a signal.
enum Next {
    Continue,
    /// Exit with this status.
    Exit(u8),
}

impl Guard<'_> {
    /// Handles signals, stop times and the stop deadlines until the command
    /// has exited and nothing is left below the guard; returns the
    /// command's status (70 when the guard stopped it on its own).
    fn supervise(&mut self, signals: &SignalFd, stop_times: &mut Receiver) -> u8 {
        // Bounded by the command's life and the kill time: every round waits
        // at most until the next stop time, and at the kill time the loop ends.
        loop {
            let now = match stop_times::now() {
                Ok(now) => now,
                Err(e) => return self.fail(&format!("the guard cannot read the clock ({e})")),
            };
            if now >= self.stop.kill_at {
                stderr_line!(
                    "redquorum {}: no renewal of the lease from redquorum by its kill time; killing the command",
                    self.name
                );
                self.kill_tree();
                return exit::SOFTWARE;
            }
            if !self.stopping && now >= self.stop.term_at {
                stderr_line!(
                    "redquorum {}: no renewal of the lease from redquorum by its stop time; stopping the command",
                    self.name
                );
                self.stopping = true;
                subtree::signal_descendants(getpid(), Signal::SIGTERM);
            }
            let next = if self.stopping {
                self.stop.kill_at
            } else {
                self.stop.term_at
            };
            // Rounded down to whole milliseconds: early, never late.
            let timeout =
                PollTimeout::try_from(stop_times::until(now, next)).unwrap_or(PollTimeout::MAX);
            let mut ready = [
                PollFd::new(signals.as_fd(), PollFlags::POLLIN),
                PollFd::new(stop_times.as_fd(), PollFlags::POLLIN),
            ];
            match poll(&mut ready, timeout) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return self.fail(&format!("the guard cannot wait ({e})")),
            }
            // Both read without blocking: what is there, whichever woke us.
            if let Next::Exit(code) = self.read_signals(signals) {
                return code;
            }
            match stop_times.read() {
                Ok(Received::Latest(Some(times))) if !self.stopping => self.stop = times,
                Ok(Received::Latest(_)) => {}
                // As if the kernel's parent-death signal had come.
                Ok(Received::Closed) => {
                    self.kill_tree();
                    return self.status.unwrap_or(128 + 9);
                }
                Err(e) => {
                    return self.fail(&format!(
                        "the guard cannot read the lease's stop times ({e})"
                    ));
                }
            }
            if let Some(status) = self.status {
                // What the command left running dies before the lock is released.
                self.kill_tree();
                return if self.stopping {
                    exit::SOFTWARE
                } else {
                    status
                };
            }
        }
    }

    /// Kills the command's tree after an internal error; the status to exit with.
    fn fail(&mut self, why: &str) -> u8 {
        stderr_line!("redquorum {}: {why}; killing the command", self.name);
        self.kill_tree();
        exit::SOFTWARE
    }

    /// Handles the signals that arrived.
    fn read_signals(&mut self, signals: &SignalFd) -> Next {
        // Bounded: signals arrive only as fast as someone sends them, and
        // each round takes one (a standard signal is pending at most once).
        loop {
            let info = match signals.read_signal() {
                Ok(Some(info)) => info,
                Ok(None) => return Next::Continue,
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    return Next::Exit(self.fail(&format!("the guard cannot read signals ({e})")));
                }
            };
            let sig = i32::try_from(info.ssi_signo)
                .ok()
                .and_then(|n| Signal::try_from(n).ok());
            match sig {
                Some(Signal::SIGCHLD) => self.reap(),
                Some(KILL_TREE) => {
                    self.kill_tree();
                    // 128 + SIGKILL if the command was somehow not reaped.
                    return Next::Exit(self.status.unwrap_or(128 + 9));
                }
                // `exec` stops the command: the guard's own stop must not
                // send the tree a second SIGTERM.
                Some(TERMINATE_TREE) if !self.stopping => {
                    self.stopping = true;
                    subtree::signal_descendants(getpid(), Signal::SIGTERM);
                }
                Some(sig @ (Signal::SIGINT | Signal::SIGTERM | Signal::SIGHUP))
                    if info.ssi_code != libc::SI_KERNEL && self.status.is_none() =>
                {
                    let _ = signal::kill(self.command, sig);
                }
                _ => {}
            }
        }
    }

    /// Reaps every child that has exited (the command, or adopted orphans),
    /// keeping the command's status.
    fn reap(&mut self) {
        // Bounded: each round reaps one exited child, and there are finitely many.
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::Exited(pid, code)) if pid == self.command => {
                    self.status = Some(exit::shell_status(Some(code), None));
                }
                Ok(WaitStatus::Signaled(pid, sig, _)) if pid == self.command => {
                    self.status = Some(exit::shell_status(None, Some(sig as i32)));
                }
                Ok(WaitStatus::StillAlive) | Err(_) => return,
                Ok(_) => {}
            }
        }
    }

    /// SIGKILLs everything below the guard, in rounds, until nothing is left
    /// alive (bounded by [`KILL_FOR`] and [`MAX_KILL_ROUNDS`]), reaping as it goes.
    fn kill_tree(&mut self) {
        let start = Instant::now();
        for _ in 0..MAX_KILL_ROUNDS {
            // Orphans of killed processes are reparented to us, so the next
            // round finds them.
            let killed = subtree::signal_descendants(getpid(), Signal::SIGKILL);
            self.reap();
            if killed == 0 || start.elapsed() > KILL_FOR {
                if killed > 0 {
                    stderr_line!(
                        "redquorum {}: {killed} processes below the command survived SIGKILL for {KILL_FOR:?}",
                        self.name
                    );
                }
                return;
            }
            std::thread::sleep(KILL_ROUND_PAUSE);
        }
    }
}
