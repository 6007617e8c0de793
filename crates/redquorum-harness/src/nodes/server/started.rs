//! Every local `redis-server` this process started and has not reaped, and
//! every temp dir of node data not yet removed, process-wide: what a process
//! ending on a signal must stop itself ([`stop_started_servers`]), since the
//! signal skips the destructors that stop them at a normal end.
//!
//! A pid is listed only while its process is an unreaped child of this one,
//! so it can never name another process: a node's pid is forgotten before
//! it is waited for, and a `try_wait` that may reap it runs under the list's
//! lock (`reap`). Spawning runs under that lock too, so no node starts
//! behind the sweep (a nemesis thread restarting one, say).

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;

/// How long the sweep waits for a killed server to die before it removes
/// the data dirs anyway (SIGKILL takes effect at once unless the kernel is
/// stuck in I/O for it).
const DEATH_WAIT: Duration = Duration::from_secs(5);

struct Started {
    pids: BTreeSet<u32>,
    dirs: BTreeSet<PathBuf>,
    /// Set by the sweep: the process is ending, no node may start.
    stopping: bool,
}

static STARTED: Mutex<Started> = Mutex::new(Started {
    pids: BTreeSet::new(),
    dirs: BTreeSet::new(),
    stopping: false,
});

/// The list holds plain data; a panic elsewhere cannot leave it inconsistent.
fn started() -> MutexGuard<'static, Started> {
    STARTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Spawns `command` (a server) and lists its process; refused once
/// [`stop_started_servers`] has run.
pub(in crate::nodes) fn spawn(command: &mut Command) -> io::Result<Child> {
    let mut started = started();
    if started.stopping {
        return Err(io::Error::other(
            "the process is stopping its servers (interrupted)",
        ));
    }
    let child = command.spawn()?;
    started.pids.insert(child.id());
    Ok(child)
}

/// Kills `child` (SIGKILL) and forgets it, for its owner to wait for next.
pub(in crate::nodes) fn kill(child: &mut Child) {
    let _ = child.kill(); // fails only if it already exited
    started().pids.remove(&child.id());
}

/// `child.try_wait()`, forgetting the child if that reaped it.
pub(in crate::nodes) fn try_wait(child: &mut Child) -> io::Result<Option<ExitStatus>> {
    let mut started = started();
    let status = child.try_wait();
    if matches!(status, Ok(Some(_))) {
        started.pids.remove(&child.id());
    }
    status
}

/// A temp dir of node data, listed while it exists.
#[derive(Debug)]
pub(in crate::nodes) struct NodesDir(Option<tempfile::TempDir>);

impl NodesDir {
    /// Lists `dir` until this is dropped.
    pub(in crate::nodes) fn new(dir: tempfile::TempDir) -> Self {
        started().dirs.insert(dir.path().to_owned());
        Self(Some(dir))
    }

    /// The directory.
    pub(in crate::nodes) fn path(&self) -> &Path {
        self.0
            .as_ref()
            .map_or(Path::new(""), tempfile::TempDir::path)
    }
}

impl Drop for NodesDir {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let path = dir.path().to_owned();
            // Removed before it is forgotten: a sweep in between removes it too.
            let _ = dir.close();
            started().dirs.remove(&path);
        }
    }
}

/// Stops every `redis-server` this process started and has not stopped
/// (SIGKILL), waits until each is dead (a few seconds at most), and
/// removes their data dirs; from then on, starting a node fails. For a
/// process about to exit on a signal, which skips the destructors that
/// would stop them. Returns how many servers it killed.
///
/// # Examples
///
/// ```no_run
/// // In a SIGTERM handler, just before exiting:
/// let killed = redquorum_harness::stop_started_servers();
/// std::process::exit(128 + 15);
/// ```
pub fn stop_started_servers() -> usize {
    let mut started = started();
    started.stopping = true;
    let pids: Vec<u32> = std::mem::take(&mut started.pids).into_iter().collect();
    for &pid in &pids {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    let deadline = Instant::now() + DEATH_WAIT;
    // Bounded by DEATH_WAIT.
    while pids.iter().any(|&pid| is_alive(pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    for dir in std::mem::take(&mut started.dirs) {
        let _ = std::fs::remove_dir_all(dir);
    }
    pids.len()
}

/// True while `pid` has not died: it is neither gone nor a zombie (its
/// owner may not have reaped it yet).
fn is_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the command name, which is in parentheses.
    let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
    !matches!(state.and_then(|s| s.chars().next()), Some('Z' | 'X') | None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_child_is_forgotten_once_reaped() {
        let mut child = spawn(&mut Command::new("true")).unwrap();
        let pid = child.id();
        assert!(started().pids.contains(&pid));
        let reaped = Instant::now() + Duration::from_secs(10);
        while try_wait(&mut child).unwrap().is_none() {
            assert!(Instant::now() < reaped, "`true` never exited");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!started().pids.contains(&pid));
    }

    #[test]
    fn a_killed_child_is_forgotten_before_it_is_waited_for() {
        let mut child = spawn(Command::new("sleep").arg("60")).unwrap();
        let pid = child.id();
        kill(&mut child);
        assert!(!started().pids.contains(&pid));
        assert!(child.wait().is_ok());
    }

    #[test]
    fn a_nodes_dir_is_listed_until_dropped_and_removed() {
        let dir = NodesDir::new(tempfile::tempdir().unwrap());
        let path = dir.path().to_owned();
        assert!(started().dirs.contains(&path));
        drop(dir);
        assert!(!started().dirs.contains(&path) && !path.exists());
    }
}
