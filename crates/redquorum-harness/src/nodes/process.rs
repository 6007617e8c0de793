//! Faults on a local node's process: kill, restart (at once, after a
//! delay, or from a snapshot of its data), SIGSTOP and SIGCONT, and the
//! wall clock of a node started with a controlled clock; each delegates to
//! the node's `LocalNode` (`local.rs`). External nodes refuse
//! them ([`HarnessError::External`]).

use std::time::Duration;

use super::cluster::{Cluster, Nodes};
use super::server::{free_port, wait_pong};
use crate::error::{HarnessError, log_tail};

impl Cluster {
    /// Crashes node `index` with SIGKILL and waits until the process is gone.
    ///
    /// # Errors
    ///
    /// External nodes, a bad index, or a signal failure.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.kill(0).unwrap();
    /// assert!(cluster.conn(0).is_err());
    /// ```
    pub fn kill(&self, index: usize) -> Result<(), HarnessError> {
        self.local(index)?[index].kill(index)
    }

    /// Starts node `index` again on the same port and data directory (killing it first if running).
    /// What it remembers depends on the cluster's [`Persistence`](crate::Persistence).
    ///
    /// # Errors
    ///
    /// External nodes, or a node that does not come back.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.command(0, &["SET", "k", "1"]).unwrap();
    /// cluster.restart(0).unwrap();
    /// // no persistence: the key is gone
    /// assert_eq!(cluster.command(0, &["GET", "k"]).unwrap().as_text(), None);
    /// ```
    pub fn restart(&self, index: usize) -> Result<(), HarnessError> {
        self.kill(index)?;
        self.respawn(index)
    }

    /// Crashes node `index` (SIGKILL), waits `delay` while it is down, then starts it again.
    ///
    /// A delay of at least the maximum lock TTL makes a restart without
    /// persistence safe for Redlock: every key the node forgot had expired anyway.
    ///
    /// # Errors
    ///
    /// As [`restart`](Self::restart).
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.restart_after(0, std::time::Duration::from_millis(50)).unwrap();
    /// assert!(cluster.is_running(0));
    /// ```
    pub fn restart_after(&self, index: usize, delay: Duration) -> Result<(), HarnessError> {
        self.kill(index)?;
        std::thread::sleep(delay);
        self.respawn(index)
    }

    /// Freezes node `index` with SIGSTOP: connections still open, commands hang.
    ///
    /// # Errors
    ///
    /// External nodes, a node not running, or a signal failure.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.pause(0).unwrap();
    /// cluster.resume(0).unwrap();
    /// ```
    pub fn pause(&self, index: usize) -> Result<(), HarnessError> {
        self.local(index)?[index].signal(index, "-STOP")
    }

    /// Resumes node `index` after [`pause`](Self::pause) with SIGCONT.
    ///
    /// # Errors
    ///
    /// External nodes, a node not running, or a signal failure.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.pause(0).unwrap();
    /// cluster.resume(0).unwrap();
    /// assert!(cluster.command(0, &["PING"]).is_ok());
    /// ```
    pub fn resume(&self, index: usize) -> Result<(), HarnessError> {
        self.local(index)?[index].signal(index, "-CONT")
    }

    /// Copies node `index`'s data directory aside, for a later
    /// [`restart_from_snapshot`](Self::restart_from_snapshot) ("power loss").
    ///
    /// # Errors
    ///
    /// External nodes, or a copy failure.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{Cluster, Persistence};
    /// let cluster = Cluster::start_with(1, Persistence::AofAlways).unwrap();
    /// cluster.snapshot(0).unwrap();
    /// cluster.command(0, &["SET", "k", "1"]).unwrap();
    /// cluster.restart_from_snapshot(0).unwrap();
    /// // the write after the snapshot is lost, as unsynced writes are in a power cut
    /// assert_eq!(cluster.command(0, &["GET", "k"]).unwrap().as_text(), None);
    /// ```
    pub fn snapshot(&self, index: usize) -> Result<(), HarnessError> {
        self.local(index)?[index].snapshot(index)
    }

    /// Crashes node `index`, rolls its data directory back to the last
    /// [`snapshot`](Self::snapshot) (an empty one if none), and starts it again.
    ///
    /// # Errors
    ///
    /// External nodes, a copy failure, or a node that does not come back.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.restart_from_snapshot(0).unwrap();
    /// assert!(cluster.is_running(0));
    /// ```
    pub fn restart_from_snapshot(&self, index: usize) -> Result<(), HarnessError> {
        self.kill(index)?;
        self.local(index)?[index].roll_back(index)?;
        self.respawn(index)
    }

    /// True when node `index`'s clock can be moved at run time (see
    /// [`ClusterBuilder::controlled_clock`](crate::ClusterBuilder::controlled_clock)).
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert!(!cluster.has_controlled_clock(0));
    /// ```
    #[must_use]
    pub fn has_controlled_clock(&self, index: usize) -> bool {
        self.local(index)
            .is_ok_and(|nodes| nodes[index].has_controlled_clock())
    }

    /// Sets node `index`'s wall clock to real time plus `offset_ms` (negative:
    /// behind), at once: a clock jump, forward or back, as NTP stepping or a
    /// strobing clock does. Only for a node started with a controlled clock;
    /// one that also runs fast ([`ClusterBuilder::fast_clock`](crate::ClusterBuilder::fast_clock))
    /// is set `offset_ms` ahead of where its rate has taken it.
    ///
    /// # Errors
    ///
    /// [`HarnessError::FaketimeUnavailable`] for a node without a controlled
    /// clock; I/O errors writing its timestamp file.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert!(cluster.set_clock_offset(0, 20).is_err());
    /// ```
    pub fn set_clock_offset(&self, index: usize, offset_ms: i64) -> Result<(), HarnessError> {
        self.local(index)?[index].set_clock_offset(index, offset_ms)
    }

    /// Starts node `index` on a port free at the time (not waiting for it).
    pub(super) fn spawn_on_free_port(&self, index: usize) -> Result<(), HarnessError> {
        let port = free_port().map_err(|source| HarnessError::Io {
            node: index,
            action: "find a free port",
            source,
        })?;
        self.local(index)?[index].port = port;
        self.spawn(index)
    }

    /// Starts node `index`'s process on its port (not waiting for it).
    fn spawn(&self, index: usize) -> Result<(), HarnessError> {
        let Nodes::Local { server, .. } = &self.nodes else {
            return Err(HarnessError::External(index));
        };
        self.local(index)?[index].spawn(index, server)
    }

    /// Starts node `index` again on its port. Another process (a parallel
    /// test probing for a free port) can hold the port for a moment, and the
    /// node then exits at once: try a few times before giving up.
    fn respawn(&self, index: usize) -> Result<(), HarnessError> {
        let mut last = None;
        for _attempt in 0..5 {
            self.spawn(index)?;
            match self.wait_ready(index) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    self.kill(index)?;
                    last = Some(e);
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        Err(last.unwrap_or(HarnessError::NoSuchNode(index)))
    }

    /// Waits until node `index` answers PING (not LOADING).
    pub(super) fn wait_ready(&self, index: usize) -> Result<(), HarnessError> {
        let (port, pid, log) = {
            let nodes = self.local(index)?;
            let node = &nodes[index];
            (node.port, node.pid(), node.log())
        };
        let not_ready = || HarnessError::NotReady {
            node: index,
            port,
            log_tail: log_tail(&log),
        };
        if wait_pong(port, pid, || self.is_running(index)) {
            Ok(())
        } else {
            Err(not_ready())
        }
    }
}
