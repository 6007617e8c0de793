//! `LocalNode`: one local `redis-server` process, owned by its
//! [`Cluster`](crate::Cluster): its port, its data directory, its clock and
//! the process itself (started, killed, signalled, its data snapshotted and
//! rolled back, its clock moved). The cluster keeps them in a table behind
//! one mutex and delegates to them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use super::server::clock::{FastClock, uncontrolled};
use super::server::persistence::Persistence;
use super::server::port_hold::PortHold;
use super::server::redis_command;
use super::server::started;
use crate::error::HarnessError;

/// How every local node of a cluster is started.
#[derive(Debug)]
pub(super) struct ServerConfig {
    /// The `redis-server` binary.
    pub(super) binary: PathBuf,
    /// Redis 7 refuses DEBUG unless started with `--enable-debug-command`.
    pub(super) debug_flag: bool,
    /// What every node writes to disk.
    pub(super) persistence: Persistence,
    /// More `redis-server` arguments, after the usual ones (cluster mode:
    /// `--cluster-enabled yes`, ...).
    pub(super) extra_args: Vec<String>,
}

/// One local node's process state.
#[derive(Debug)]
pub(super) struct LocalNode {
    /// Its port (0 until first started).
    pub(super) port: u16,
    dir: PathBuf,
    child: Option<Child>,
    /// Its port, bound while it is killed (`port_hold.rs`).
    held: Option<PortHold>,
    /// Set for a node whose clock runs fast (libfaketime on a libc-malloc binary).
    clock: Option<FastClock>,
}

impl LocalNode {
    /// A node with its data in `dir`, not started.
    pub(super) fn new(dir: PathBuf, clock: Option<FastClock>) -> Self {
        Self {
            port: 0,
            dir,
            child: None,
            held: None,
            clock,
        }
    }

    /// Starts the process on the node's port (not waiting for it to answer).
    pub(super) fn spawn(
        &mut self,
        index: usize,
        server: &ServerConfig,
    ) -> Result<(), HarnessError> {
        let mut command = match &mut self.clock {
            None => redis_command(
                &server.binary,
                self.port,
                &self.dir,
                server.persistence,
                server.debug_flag,
            ),
            Some(clock) => clock.command(index, self.port, &self.dir, server.persistence)?,
        };
        command.args(&server.extra_args);
        self.held = None;
        let child = started::spawn(&mut command).map_err(|source| HarnessError::Io {
            node: index,
            action: "spawn redis-server",
            source,
        })?;
        self.child = Some(child);
        Ok(())
    }

    /// Kills the process (SIGKILL) and waits until it is gone; nothing to
    /// do when it is not running.
    pub(super) fn kill(&mut self, index: usize) -> Result<(), HarnessError> {
        if let Some(mut child) = self.child.take() {
            started::kill(&mut child);
            child.wait().map_err(|source| HarnessError::Io {
                node: index,
                action: "wait for killed process",
                source,
            })?;
            self.held = Some(PortHold::bind(self.port));
        }
        Ok(())
    }

    /// Kills the process, errors ignored (its cluster is being dropped).
    pub(super) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            started::kill(&mut child);
            let _ = child.wait();
        }
    }

    /// True while the process runs.
    pub(super) fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(started::try_wait(c), Ok(None)))
    }

    /// The process id (0 when not started).
    pub(super) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The server's log file.
    pub(super) fn log(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    /// Sends `signal` (`-STOP`, `-CONT`) to the process with `kill`.
    pub(super) fn signal(&self, index: usize, signal: &str) -> Result<(), HarnessError> {
        let pid = self
            .child
            .as_ref()
            .map(Child::id)
            .ok_or_else(|| HarnessError::Io {
                node: index,
                action: "signal",
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "node is not running"),
            })?;
        let status = Command::new("kill")
            .arg(signal)
            .arg(pid.to_string())
            .status()
            .map_err(|source| HarnessError::Io {
                node: index,
                action: "run kill",
                source,
            })?;
        if status.success() {
            Ok(())
        } else {
            Err(HarnessError::Io {
                node: index,
                action: "signal",
                source: std::io::Error::other(format!("kill {signal} {pid} failed")),
            })
        }
    }

    /// Copies the data directory aside, for a later [`roll_back`](Self::roll_back).
    pub(super) fn snapshot(&self, index: usize) -> Result<(), HarnessError> {
        let snapshot = snapshot_dir(&self.dir);
        let io = |source| HarnessError::Io {
            node: index,
            action: "snapshot data dir",
            source,
        };
        if snapshot.exists() {
            std::fs::remove_dir_all(&snapshot).map_err(io)?;
        }
        copy_dir(&self.dir, &snapshot).map_err(io)
    }

    /// Puts the data directory back as the last snapshot left it (empty if
    /// none); the process must be down.
    pub(super) fn roll_back(&self, index: usize) -> Result<(), HarnessError> {
        let snapshot = snapshot_dir(&self.dir);
        let io = |source| HarnessError::Io {
            node: index,
            action: "roll back data dir",
            source,
        };
        std::fs::remove_dir_all(&self.dir).map_err(io)?;
        if snapshot.exists() {
            copy_dir(&snapshot, &self.dir).map_err(io)
        } else {
            std::fs::create_dir_all(&self.dir).map_err(io)
        }
    }

    /// True when the node's wall clock can be moved at run time.
    pub(super) fn has_controlled_clock(&self) -> bool {
        self.clock.as_ref().is_some_and(FastClock::is_controlled)
    }

    /// Sets the node's wall clock `offset_ms` ahead of where its rate has
    /// taken it (real time at rate 1).
    pub(super) fn set_clock_offset(
        &mut self,
        index: usize,
        offset_ms: i64,
    ) -> Result<(), HarnessError> {
        match &mut self.clock {
            Some(clock) => clock.set_offset(index, offset_ms),
            None => Err(uncontrolled(index)),
        }
    }
}

fn snapshot_dir(dir: &Path) -> PathBuf {
    dir.with_extension("snapshot")
}

/// Copies a directory tree (a node's data dir: a few small files).
fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}
