//! The stop times `exec` hands to the guard, so the guard can stop the
//! command on its own when `exec` cannot: `exec` stopped (SIGSTOP, a
//! debugger, a paused container), starved of CPU or swapped out. A stopped
//! `exec` then costs the command its run, never the lock its safety.
//!
//! For each lease deadline (the first, then each one an extension moves it
//! to) `exec` writes one line on a pipe: when to SIGTERM the tree (the stop
//! margin before the deadline) and when to SIGKILL it (`StopPlan::kill_at`),
//! as instants of `CLOCK_BOOTTIME` in nanoseconds. Both processes read that
//! one system-wide clock, so an instant means the same to both however late
//! the line is read; and it also counts a suspend of the host, during which
//! the nodes keep counting down their TTLs. The guard acts on the last line
//! it has read: no renewal in time, and it stops the command by itself.
//!
//! The first line is in the pipe before the guard starts, so the command
//! never runs without a stop time. The pipe's end of file tells the guard
//! that `exec` is gone (the kernel's `PR_SET_PDEATHSIG` says so too).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::time::{Duration, Instant};

use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::libc;
use nix::time::{ClockId, clock_gettime};

/// When the guard stops the command if no later stop times come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StopTimes {
    /// SIGTERM to every process below the guard (ns of `CLOCK_BOOTTIME`).
    pub(crate) term_at: u64,
    /// SIGKILL to every process below the guard (ns of `CLOCK_BOOTTIME`).
    pub(crate) kill_at: u64,
}

impl StopTimes {
    /// The stop times of `term` and `kill`, instants of this process.
    pub(crate) fn at(term: Instant, kill: Instant) -> io::Result<Self> {
        Ok(Self {
            term_at: boottime_of(term)?,
            kill_at: boottime_of(kill)?,
        })
    }

    fn line(self) -> String {
        format!("{} {}\n", self.term_at, self.kill_at)
    }

    fn parse(line: &[u8]) -> Option<Self> {
        let line = std::str::from_utf8(line).ok()?;
        let (term, kill) = line.trim().split_once(' ')?;
        Some(Self {
            term_at: term.parse().ok()?,
            kill_at: kill.parse().ok()?,
        })
    }
}

/// Now, in ns of `CLOCK_BOOTTIME`.
pub(crate) fn now() -> io::Result<u64> {
    let now = clock_gettime(ClockId::CLOCK_BOOTTIME)?;
    let secs = u64::try_from(now.tv_sec()).unwrap_or(0);
    let nanos = u64::try_from(now.tv_nsec()).unwrap_or(0);
    Ok(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// The time from `now` (ns of `CLOCK_BOOTTIME`) to `at`, zero once passed.
pub(crate) fn until(now: u64, at: u64) -> Duration {
    Duration::from_nanos(at.saturating_sub(now))
}

/// `at` (an `Instant` of this process) in ns of `CLOCK_BOOTTIME`. The clock
/// is read before `Instant::now()`: a pause between the two reads makes the
/// result earlier, never later (the guard then stops sooner, never too late).
fn boottime_of(at: Instant) -> io::Result<u64> {
    let boot_now = now()?;
    let left = at.saturating_duration_since(Instant::now());
    let left = u64::try_from(left.as_nanos()).unwrap_or(u64::MAX);
    Ok(boot_now.saturating_add(left))
}

/// `exec`'s end of the pipe.
#[derive(Debug)]
pub(crate) struct Sender {
    pipe: File,
}

impl Sender {
    /// A pipe whose first line is `first`: the sender, and the read end for
    /// the guard (inherited by the next process started: pass its number).
    ///
    /// Only the read end is inherited; `exec` starts no other process, so
    /// nothing else gets it.
    pub(crate) fn with_first(first: StopTimes) -> io::Result<(Self, OwnedFd)> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        fcntl(&read, FcntlArg::F_SETFD(FdFlag::empty()))?;
        // Never block `exec`: a full pipe means the guard is not reading;
        // a lost update only makes it stop the command sooner.
        fcntl(&write, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        let mut sender = Self {
            pipe: File::from(write),
        };
        sender.pipe.write_all(first.line().as_bytes())?;
        Ok((sender, read))
    }

    /// Sends new stop times. Failures are ignored: a guard that is gone
    /// needs none, and one that does not read stops the command at the last
    /// times it read, which are earlier.
    pub(crate) fn send(&mut self, times: StopTimes) {
        // One write of less than PIPE_BUF bytes: all of it or nothing.
        let _ = self.pipe.write(times.line().as_bytes());
    }
}

/// What the guard read from the pipe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Received {
    /// The last complete line, if any came.
    Latest(Option<StopTimes>),
    /// End of file: `exec` is gone.
    Closed,
}

/// The guard's end of the pipe.
#[derive(Debug)]
pub(crate) struct Receiver {
    pipe: File,
    /// A line not yet complete.
    partial: Vec<u8>,
}

impl Receiver {
    /// Opens the inherited read end `fd` anew through `/proc` (without
    /// `unsafe`, and close-on-exec: the command does not get it; the
    /// inherited number itself is closed in the command by the spawn).
    pub(crate) fn open(fd: RawFd) -> io::Result<Self> {
        let pipe = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(format!("/proc/self/fd/{fd}"))?;
        if !pipe.metadata()?.file_type().is_fifo() {
            return Err(io::Error::other(format!("fd {fd} is not a pipe")));
        }
        Ok(Self {
            pipe,
            partial: Vec::new(),
        })
    }

    /// Reads what is there without blocking.
    pub(crate) fn read(&mut self) -> io::Result<Received> {
        let mut latest = None;
        let mut buf = [0u8; 4096];
        // Bounded: each round empties up to 4 KiB of a pipe that holds 64 KiB,
        // and `exec` writes a line per extension.
        loop {
            match self.pipe.read(&mut buf) {
                Ok(0) => return Ok(Received::Closed),
                Ok(n) => self.partial.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            match StopTimes::parse(&line) {
                Some(times) => latest = Some(times),
                None => return Err(io::Error::other("a malformed stop time")),
            }
        }
        Ok(Received::Latest(latest))
    }
}

impl AsFd for Receiver {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.pipe.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn stop_times_cross_the_pipe_and_only_the_last_counts() {
        let now = Instant::now();
        let first = StopTimes::at(now, now + Duration::from_millis(250)).unwrap();
        assert!(first.kill_at > first.term_at);
        let (mut sender, read) = Sender::with_first(first).unwrap();
        let mut receiver = Receiver::open(read.as_raw_fd()).unwrap();
        assert_eq!(receiver.read().unwrap(), Received::Latest(Some(first)));
        assert_eq!(receiver.read().unwrap(), Received::Latest(None));
        let later = StopTimes {
            term_at: first.term_at + 1,
            kill_at: first.kill_at + 1,
        };
        let latest = StopTimes {
            term_at: first.term_at + 2,
            kill_at: first.kill_at + 2,
        };
        sender.send(later);
        sender.send(latest);
        assert_eq!(receiver.read().unwrap(), Received::Latest(Some(latest)));
        // A copy of the write end elsewhere (as a fork holds one until its
        // exec) keeps the pipe open after `exec`'s own end is dropped.
        let copy = sender.pipe.try_clone().unwrap();
        drop(sender);
        assert_eq!(receiver.read().unwrap(), Received::Latest(None));
        drop(copy);
        // Another test thread's fork may still hold a copy until its exec
        // closes it (close-on-exec), so the end of file is waited for rather
        // than expected at once.
        assert_eq!(next_news(&mut receiver), Received::Closed);
    }

    /// The first read that finds something, waiting on the pipe (30 s at most).
    fn next_news(receiver: &mut Receiver) -> Received {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let deadline = Instant::now() + Duration::from_secs(30);
        // Bounded by the deadline: each round waits for the pipe to change.
        loop {
            match receiver.read().unwrap() {
                Received::Latest(None) => {}
                news => return news,
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "nothing came on the pipe in 30 s");
            let mut ready = [PollFd::new(receiver.as_fd(), PollFlags::POLLIN)];
            let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
            match poll(&mut ready, timeout) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => panic!("poll: {e}"),
            }
        }
    }

    #[test]
    fn an_instant_maps_to_the_boot_clock_no_later_than_it_is() {
        let before = now().unwrap();
        let at = StopTimes::at(Instant::now(), Instant::now() + Duration::from_secs(2)).unwrap();
        let after = now().unwrap();
        // An instant just taken is now on the boot clock (within the reads).
        assert!(
            before <= at.term_at && at.term_at <= after,
            "{before} {at:?} {after}"
        );
        assert!(at.kill_at <= after + 2_000_000_000, "{at:?} {after}");
        assert_eq!(until(after, before), Duration::ZERO);
    }
}
