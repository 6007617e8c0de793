//! `Cluster`: N real `redis-server` processes on loopback, and their lifecycle faults.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::resp::{Reply, RespConn};
use crate::error::HarnessError;

/// How long a started node may take to answer PING (AOF replay included).
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// What a node writes to disk, which decides what it remembers after a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Persistence {
    /// Nothing: a restarted node is empty (unsafe for Redlock without a delayed restart).
    #[default]
    None,
    /// AOF, fsync once a second: survives a process kill, not an OS crash.
    AofEverySec,
    /// AOF, fsync before every reply: survives both.
    AofAlways,
}

/// One local node's process state.
#[derive(Debug)]
struct LocalNode {
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
    /// Set for a node whose clock runs fast (libfaketime on a libc-malloc binary).
    clock: Option<FastClock>,
}

/// How a fast-clock node is started: which binary, which preload, which
/// rate, and for a node whose clock the harness moves at run time, the
/// libfaketime timestamp file it rewrites.
#[derive(Debug, Clone)]
struct FastClock {
    support: super::clock::FaketimeSupport,
    rate: f64,
    /// Set for a controlled clock (read on every clock call: FAKETIME_NO_CACHE).
    file: Option<PathBuf>,
}

/// Where the nodes come from.
#[derive(Debug)]
enum Nodes {
    /// Started here; process control available.
    Local {
        binary: PathBuf,
        /// Redis 7 refuses DEBUG unless started with `--enable-debug-command`.
        debug_flag: bool,
        persistence: Persistence,
        nodes: Mutex<Vec<LocalNode>>,
        _root: tempfile::TempDir,
    },
    /// From `REDQUORUM_NODES`: URLs only.
    External { urls: Vec<String> },
}

/// A set of Redis masters for tests: local processes, or external nodes.
///
/// Local processes are killed when the `Cluster` is dropped, including
/// during a panic's unwinding. Methods take `&self`, so a cluster can be
/// shared (in an `Arc`) between a test and a fault-injecting task.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use redquorum_harness::Cluster;
///
/// let cluster = Cluster::start(3)?;
/// assert_eq!(cluster.urls().len(), 3);
/// cluster.kill(0)?;
/// assert!(!cluster.is_running(0));
/// cluster.restart(0)?;
/// assert!(cluster.is_running(0));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Cluster {
    nodes: Nodes,
}

/// The `redis-server` binary: `REDQUORUM_REDIS_SERVER`, else the first on `PATH`.
///
/// # Errors
///
/// [`HarnessError::RedisNotInstalled`], with install instructions.
///
/// # Examples
///
/// ```
/// let path = redquorum_harness::redis_server_path().expect("redis-server installed");
/// assert!(path.exists());
/// ```
pub fn redis_server_path() -> Result<PathBuf, HarnessError> {
    if let Some(path) = std::env::var_os("REDQUORUM_REDIS_SERVER") {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(HarnessError::RedisNotInstalled)
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("redis-server"))
        .find(|candidate| candidate.is_file())
        .ok_or(HarnessError::RedisNotInstalled)
}

impl Cluster {
    /// Starts `n` local nodes without persistence.
    ///
    /// # Errors
    ///
    /// `redis-server` missing, or a node that does not start.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(5).unwrap();
    /// assert_eq!(cluster.len(), 5);
    /// ```
    pub fn start(n: usize) -> Result<Self, HarnessError> {
        Self::start_with(n, Persistence::None)
    }

    /// Starts `n` local nodes with the given persistence.
    ///
    /// # Errors
    ///
    /// `redis-server` missing, or a node that does not start.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{Cluster, Persistence};
    /// let cluster = Cluster::start_with(3, Persistence::AofAlways).unwrap();
    /// ```
    pub fn start_with(n: usize, persistence: Persistence) -> Result<Self, HarnessError> {
        Self::builder(n).persistence(persistence).start()
    }

    /// A builder for clusters with per-node settings (a fast clock on some nodes).
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{Cluster, Persistence};
    /// let cluster = Cluster::builder(3).persistence(Persistence::AofEverySec).start().unwrap();
    /// assert_eq!(cluster.len(), 3);
    /// ```
    pub fn builder(n: usize) -> crate::ClusterBuilder {
        crate::ClusterBuilder::new(n)
    }

    pub(crate) fn start_built(
        n: usize,
        persistence: Persistence,
        clocks: &[(usize, f64)],
        controlled: &[(usize, Duration)],
    ) -> Result<Self, HarnessError> {
        let binary = redis_server_path()?;
        let support = if clocks.is_empty() && controlled.is_empty() {
            None
        } else {
            Some(super::clock::faketime_support()?)
        };
        let debug_flag = major_version(&binary) >= 7;
        let root = tempfile::Builder::new()
            .prefix("redquorum-nodes-")
            .tempdir()
            .map_err(|source| HarnessError::Io {
                node: 0,
                action: "create temp dir",
                source,
            })?;
        let mut nodes = Vec::with_capacity(n);
        for index in 0..n {
            let dir = root.path().join(format!("node{index}"));
            std::fs::create_dir_all(&dir).map_err(|source| HarnessError::Io {
                node: index,
                action: "create node dir",
                source,
            })?;
            let mut clock = clocks
                .iter()
                .rev()
                .find(|(i, _)| *i == index)
                .zip(support.as_ref())
                .map(|((_, rate), support)| FastClock {
                    support: support.clone(),
                    rate: *rate,
                    file: None,
                });
            if let Some((_, offset)) = controlled.iter().rev().find(|(i, _)| *i == index) {
                let support = support.clone().ok_or_else(|| {
                    HarnessError::FaketimeUnavailable(
                        "no libfaketime for a controlled clock".into(),
                    )
                })?;
                let file = dir.join("faketime");
                let rate = clock.as_ref().map_or(1.0, |c| c.rate);
                write_clock_file(&file, offset.as_secs_f64(), rate).map_err(|source| {
                    HarnessError::Io {
                        node: index,
                        action: "write the faketime file",
                        source,
                    }
                })?;
                clock = Some(FastClock {
                    support,
                    rate,
                    file: Some(file),
                });
            }
            nodes.push(LocalNode {
                port: 0,
                dir,
                child: None,
                clock,
            });
        }
        let cluster = Self {
            nodes: Nodes::Local {
                binary,
                debug_flag,
                persistence,
                nodes: Mutex::new(nodes),
                _root: root,
            },
        };
        // Spawn all, then wait for all, so start-ups overlap. A free port can
        // be taken between probing and binding: respawn such nodes a few times.
        let mut last_error = None;
        for _attempt in 0..5 {
            for index in 0..n {
                if !cluster.is_running(index) {
                    cluster.spawn_on_free_port(index)?;
                }
            }
            last_error = None;
            for index in 0..n {
                if let Err(e) = cluster.wait_ready(index) {
                    cluster.kill(index)?;
                    last_error = Some(e);
                }
            }
            if last_error.is_none() {
                break;
            }
        }
        if let Some(e) = last_error {
            return Err(e);
        }
        Ok(cluster)
    }

    /// Uses `REDQUORUM_NODES` (comma-separated URLs) when set, else starts `n` local nodes.
    ///
    /// # Errors
    ///
    /// A malformed `REDQUORUM_NODES`, or local start-up failure.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::from_env_or_start(3).unwrap();
    /// assert!(cluster.len() >= 1);
    /// ```
    pub fn from_env_or_start(n: usize) -> Result<Self, HarnessError> {
        match std::env::var("REDQUORUM_NODES") {
            Ok(list) if !list.trim().is_empty() => {
                let urls: Vec<String> = list.split(',').map(|u| u.trim().to_owned()).collect();
                for url in &urls {
                    parse_host_port(url).ok_or_else(|| HarnessError::BadNodeUrl(url.clone()))?;
                }
                Ok(Self {
                    nodes: Nodes::External { urls },
                })
            }
            _ => Self::start(n),
        }
    }

    /// Uses the given nodes (`redis://host:port` URLs) without process control.
    ///
    /// # Errors
    ///
    /// [`HarnessError::BadNodeUrl`] for an entry without `host:port`.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::external(vec!["redis://127.0.0.1:7001".into()]).unwrap();
    /// assert!(cluster.is_external());
    /// assert!(cluster.kill(0).is_err());
    /// ```
    pub fn external(urls: Vec<String>) -> Result<Self, HarnessError> {
        for url in &urls {
            parse_host_port(url).ok_or_else(|| HarnessError::BadNodeUrl(url.clone()))?;
        }
        Ok(Self {
            nodes: Nodes::External { urls },
        })
    }

    /// The number of nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::Cluster::start(1).unwrap().len(), 1);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        match &self.nodes {
            Nodes::Local { nodes, .. } => lock(nodes).len(),
            Nodes::External { urls } => urls.len(),
        }
    }

    /// True for a cluster of no nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!redquorum_harness::Cluster::start(1).unwrap().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the nodes come from `REDQUORUM_NODES`.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert!(!cluster.is_external());
    /// ```
    #[must_use]
    pub fn is_external(&self) -> bool {
        matches!(self.nodes, Nodes::External { .. })
    }

    /// Every node's URL, `redis://127.0.0.1:PORT` for local nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// assert!(cluster.urls()[0].starts_with("redis://127.0.0.1:"));
    /// ```
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        (0..self.len()).map(|i| self.url(i)).collect()
    }

    /// Node `index`'s URL.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert_eq!(cluster.url(0), format!("redis://127.0.0.1:{}", cluster.port(0)));
    /// ```
    #[must_use]
    pub fn url(&self, index: usize) -> String {
        match &self.nodes {
            Nodes::Local { nodes, .. } => format!("redis://127.0.0.1:{}", lock(nodes)[index].port),
            Nodes::External { urls } => urls[index].clone(),
        }
    }

    /// Node `index`'s port.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert!(cluster.port(0) > 0);
    /// ```
    #[must_use]
    pub fn port(&self, index: usize) -> u16 {
        match &self.nodes {
            Nodes::Local { nodes, .. } => lock(nodes)[index].port,
            Nodes::External { urls } => parse_host_port(&urls[index]).map_or(0, |(_, p)| p),
        }
    }

    /// A fresh blocking connection to node `index`, for checks and fault commands.
    ///
    /// # Errors
    ///
    /// The connect error (for example when the node is down).
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let mut conn = cluster.conn(0).unwrap();
    /// assert_eq!(conn.command(&["PING"]).unwrap().as_text().as_deref(), Some("PONG"));
    /// ```
    pub fn conn(&self, index: usize) -> Result<RespConn, HarnessError> {
        let io = |source| HarnessError::Io {
            node: index,
            action: "connect",
            source,
        };
        match &self.nodes {
            Nodes::Local { .. } => RespConn::connect(self.port(index)).map_err(io),
            Nodes::External { urls } => {
                let (host, port) = parse_host_port(&urls[index])
                    .ok_or_else(|| HarnessError::BadNodeUrl(urls[index].clone()))?;
                RespConn::connect_addr(&format!("{host}:{port}"), Duration::from_secs(2))
                    .map_err(io)
            }
        }
    }

    /// Runs one command on node `index` over a fresh connection.
    ///
    /// # Errors
    ///
    /// Connection or I/O failure, or [`HarnessError::Command`] for a server error reply.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.command(0, &["SET", "k", "1"]).unwrap();
    /// assert_eq!(cluster.command(0, &["GET", "k"]).unwrap().as_text().as_deref(), Some("1"));
    /// ```
    pub fn command(&self, index: usize, args: &[&str]) -> Result<Reply, HarnessError> {
        run_command(index, self.conn(index)?, args)
    }

    /// True when node `index`'s process is running (external nodes: always true).
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert!(cluster.is_running(0));
    /// ```
    #[must_use]
    pub fn is_running(&self, index: usize) -> bool {
        match &self.nodes {
            Nodes::Local { nodes, .. } => lock(nodes)
                .get_mut(index)
                .and_then(|n| n.child.as_mut())
                .is_some_and(|c| matches!(c.try_wait(), Ok(None))),
            Nodes::External { .. } => true,
        }
    }

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
        let mut nodes = self.local(index)?;
        if let Some(mut child) = nodes[index].child.take() {
            let _ = child.kill(); // fails only if it already exited
            child.wait().map_err(|source| HarnessError::Io {
                node: index,
                action: "wait for killed process",
                source,
            })?;
        }
        Ok(())
    }

    /// Starts node `index` again on the same port and data directory (killing it first if running).
    /// What it remembers depends on the cluster's [`Persistence`].
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
        self.signal(index, "-STOP")
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
        self.signal(index, "-CONT")
    }

    fn signal(&self, index: usize, signal: &str) -> Result<(), HarnessError> {
        let nodes = self.local(index)?;
        let pid = nodes[index]
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

    /// Node `index`'s `host:port` (`127.0.0.1:PORT` for local nodes), for proxies.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert_eq!(cluster.host_port(0), format!("127.0.0.1:{}", cluster.port(0)));
    /// ```
    #[must_use]
    pub fn host_port(&self, index: usize) -> String {
        match &self.nodes {
            Nodes::Local { .. } => format!("127.0.0.1:{}", self.port(index)),
            Nodes::External { urls } => parse_host_port(&urls[index])
                .map_or_else(String::new, |(host, port)| format!("{host}:{port}")),
        }
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
        let dir = self.local(index)?[index].dir.clone();
        let snapshot = snapshot_dir(&dir);
        let io = |source| HarnessError::Io {
            node: index,
            action: "snapshot data dir",
            source,
        };
        if snapshot.exists() {
            std::fs::remove_dir_all(&snapshot).map_err(io)?;
        }
        copy_dir(&dir, &snapshot).map_err(io)
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
        let dir = self.local(index)?[index].dir.clone();
        let snapshot = snapshot_dir(&dir);
        let io = |source| HarnessError::Io {
            node: index,
            action: "roll back data dir",
            source,
        };
        std::fs::remove_dir_all(&dir).map_err(io)?;
        if snapshot.exists() {
            copy_dir(&snapshot, &dir).map_err(io)?;
        } else {
            std::fs::create_dir_all(&dir).map_err(io)?;
        }
        self.respawn(index)
    }

    /// Blocks node `index`'s whole server for `duration` with `DEBUG SLEEP`;
    /// returns once the command is sent (the node is then asleep).
    ///
    /// # Errors
    ///
    /// Connection failure, or a server refusing DEBUG (external nodes may).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.debug_sleep(0, Duration::from_millis(300)).unwrap();
    /// let start = Instant::now();
    /// cluster.command(0, &["PING"]).unwrap();
    /// assert!(start.elapsed() >= Duration::from_millis(100));
    /// ```
    pub fn debug_sleep(&self, index: usize, duration: Duration) -> Result<(), HarnessError> {
        let mut conn = self.conn(index)?;
        let seconds = format!("{:.3}", duration.as_secs_f64());
        // Send now, read the reply on a thread: the caller returns while the node sleeps.
        conn.send(&["DEBUG", "SLEEP", &seconds])
            .map_err(|source| HarnessError::Io {
                node: index,
                action: "send DEBUG SLEEP",
                source,
            })?;
        std::thread::spawn(move || {
            let _ = conn.read(duration + Duration::from_secs(5));
        });
        // The server runs the command on its next loop turn; a PING on another
        // connection would race it, so give it a moment to start sleeping.
        std::thread::sleep(Duration::from_millis(20).min(duration));
        Ok(())
    }

    /// `CLIENT PAUSE` on node `index` for `duration`: only writes, or all commands.
    ///
    /// # Errors
    ///
    /// Connection failure or a server error.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.client_pause(0, std::time::Duration::from_secs(5), true).unwrap();
    /// cluster.client_unpause(0).unwrap();
    /// cluster.command(0, &["SET", "k", "1"]).unwrap();
    /// ```
    pub fn client_pause(
        &self,
        index: usize,
        duration: Duration,
        writes_only: bool,
    ) -> Result<(), HarnessError> {
        let millis = duration.as_millis().to_string();
        let mode = if writes_only { "WRITE" } else { "ALL" };
        self.command(index, &["CLIENT", "PAUSE", &millis, mode])
            .map(drop)
    }

    /// Ends a [`client_pause`](Self::client_pause) early.
    ///
    /// # Errors
    ///
    /// Connection failure or a server error.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.client_unpause(0).unwrap();
    /// ```
    pub fn client_unpause(&self, index: usize) -> Result<(), HarnessError> {
        self.command(index, &["CLIENT", "UNPAUSE"]).map(drop)
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
        self.local(index).is_ok_and(|nodes| {
            nodes[index]
                .clock
                .as_ref()
                .is_some_and(|c| c.file.is_some())
        })
    }

    /// Sets node `index`'s wall clock to real time plus `offset_ms` (negative:
    /// behind), at once: a clock jump, forward or back, as NTP stepping or a
    /// strobing clock does. Only for a node started with a controlled clock.
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
        let nodes = self.local(index)?;
        let Some((file, rate)) = nodes[index]
            .clock
            .as_ref()
            .and_then(|c| c.file.clone().map(|f| (f, c.rate)))
        else {
            return Err(HarnessError::FaketimeUnavailable(format!(
                "node {index} was not started with a controlled clock"
            )));
        };
        write_clock_file(&file, offset_ms as f64 / 1e3, rate).map_err(|source| HarnessError::Io {
            node: index,
            action: "write the faketime file",
            source,
        })
    }

    /// Empties node `index`'s script cache (`SCRIPT FLUSH`): the next
    /// EVALSHA there answers NOSCRIPT.
    ///
    /// # Errors
    ///
    /// Connection failure.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.flush_scripts(0).unwrap();
    /// ```
    pub fn flush_scripts(&self, index: usize) -> Result<(), HarnessError> {
        self.command(index, &["SCRIPT", "FLUSH"]).map(drop)
    }

    /// Deletes every key matching `pattern` on node `index`: the node forgets
    /// the locks it granted (outside Redlock's assumptions). Returns how many.
    ///
    /// # Errors
    ///
    /// Connection failure or a script error.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.command(0, &["SET", "lock:a", "x"]).unwrap();
    /// assert_eq!(cluster.forget_keys(0, "lock:*").unwrap(), 1);
    /// ```
    pub fn forget_keys(&self, index: usize, pattern: &str) -> Result<i64, HarnessError> {
        let script = "local n = 0 local c = '0' repeat local p = redis.call('SCAN', c, 'MATCH', ARGV[1], 'COUNT', 1000) c = p[1] for _, k in ipairs(p[2]) do redis.call('DEL', k) n = n + 1 end until c == '0' return n";
        Ok(self
            .command(index, &["EVAL", script, "0", pattern])?
            .as_int()
            .unwrap_or(0))
    }

    /// Jumps node `index`'s clock forward by `delta` as far as keys matching
    /// `pattern` are concerned: each TTL shrinks by `delta` (keys with less left
    /// are deleted), and in the library's lock records (hashes) each hold's
    /// expiry moves `delta` earlier. Works on any Redis, no process control
    /// needed. Returns how many keys it touched.
    ///
    /// # Errors
    ///
    /// Connection failure or a script error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.command(0, &["SET", "lock:a", "x", "PX", "10000"]).unwrap();
    /// assert_eq!(cluster.clock_jump(0, Duration::from_secs(9), "lock:*").unwrap(), 1);
    /// let pttl = cluster.command(0, &["PTTL", "lock:a"]).unwrap().as_int().unwrap();
    /// assert!(pttl <= 1000);
    /// ```
    pub fn clock_jump(
        &self,
        index: usize,
        delta: Duration,
        pattern: &str,
    ) -> Result<usize, HarnessError> {
        let millis = delta.as_millis().to_string();
        let reply = self.command(
            index,
            &["EVAL", super::clock::TTL_SHIFT_LUA, "0", &millis, pattern],
        )?;
        Ok(reply
            .as_int()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0))
    }

    /// Keys matching `pattern` on node `index`, with their PTTL in ms (−1: no expiry).
    ///
    /// # Errors
    ///
    /// Connection failure or a server error.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.command(0, &["SET", "lock:a", "x", "PX", "10000"]).unwrap();
    /// let keys = cluster.keys(0, "lock:*").unwrap();
    /// assert_eq!(keys.len(), 1);
    /// assert_eq!(keys[0].0, "lock:a");
    /// ```
    pub fn keys(&self, index: usize, pattern: &str) -> Result<Vec<(String, i64)>, HarnessError> {
        let mut conn = self.conn(index)?;
        let io = |source| HarnessError::Io {
            node: index,
            action: "scan keys",
            source,
        };
        let mut cursor = "0".to_owned();
        let mut found = Vec::new();
        // Bounded: a SCAN over a test node's keyspace ends long before this.
        for _ in 0..100_000 {
            let reply = conn
                .command(&["SCAN", &cursor, "MATCH", pattern, "COUNT", "1000"])
                .map_err(io)?;
            let Reply::Array(Some(parts)) = reply else {
                break;
            };
            cursor = parts.first().and_then(Reply::as_text).unwrap_or_default();
            if let Some(Reply::Array(Some(keys))) = parts.get(1) {
                for key in keys.iter().filter_map(Reply::as_text) {
                    let pttl = conn
                        .command(&["PTTL", &key])
                        .map_err(io)?
                        .as_int()
                        .unwrap_or(-2);
                    if pttl != -2 {
                        found.push((key, pttl));
                    }
                }
            }
            if cursor == "0" || cursor.is_empty() {
                break;
            }
        }
        Ok(found)
    }

    /// Locks the local node table, or refuses for external nodes / bad indexes.
    fn local(&self, index: usize) -> Result<MutexGuard<'_, Vec<LocalNode>>, HarnessError> {
        match &self.nodes {
            Nodes::Local { nodes, .. } => {
                let guard = lock(nodes);
                if index < guard.len() {
                    Ok(guard)
                } else {
                    Err(HarnessError::NoSuchNode(index))
                }
            }
            Nodes::External { .. } => Err(HarnessError::External(index)),
        }
    }

    fn spawn_on_free_port(&self, index: usize) -> Result<(), HarnessError> {
        let port = free_port().map_err(|source| HarnessError::Io {
            node: index,
            action: "find a free port",
            source,
        })?;
        self.local(index)?[index].port = port;
        self.spawn(index)
    }

    fn spawn(&self, index: usize) -> Result<(), HarnessError> {
        let Nodes::Local {
            binary,
            debug_flag,
            persistence,
            ..
        } = &self.nodes
        else {
            return Err(HarnessError::External(index));
        };
        let mut nodes = self.local(index)?;
        let node = &mut nodes[index];
        let mut command = match &node.clock {
            None => redis_command(binary, node.port, &node.dir, *persistence, *debug_flag),
            Some(clock) => {
                let mut command = redis_command(
                    &clock.support.redis_server,
                    node.port,
                    &node.dir,
                    *persistence,
                    major_version(&clock.support.redis_server) >= 7,
                );
                // Under libfaketime every clock call can read a file, so
                // loading a large AOF is slow: rewrite it from 1 MB on (Redis
                // waits for 64 MB), or after a long run a killed node takes
                // longer than the ready timeout to come back.
                command
                    .args(["--auto-aof-rewrite-min-size", "1mb"])
                    .env("LD_PRELOAD", &clock.support.library)
                    .env("FAKETIME_DONT_RESET", "1");
                match &clock.file {
                    None => command.env("FAKETIME", format!("+0 x{}", clock.rate)),
                    // Re-read on every call, so an offset written later takes
                    // effect at once; monotonic time stays real (Redis's
                    // timers), only the wall clock that expiry uses moves.
                    Some(file) => command
                        .env("FAKETIME_TIMESTAMP_FILE", file)
                        .env("FAKETIME_NO_CACHE", "1")
                        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
                };
                command
            }
        };
        let child = command.spawn().map_err(|source| HarnessError::Io {
            node: index,
            action: "spawn redis-server",
            source,
        })?;
        node.child = Some(child);
        Ok(())
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
    fn wait_ready(&self, index: usize) -> Result<(), HarnessError> {
        let (port, pid, log) = {
            let nodes = self.local(index)?;
            let node = &nodes[index];
            (
                node.port,
                node.child.as_ref().map_or(0, Child::id),
                node.dir.join("redis.log"),
            )
        };
        let not_ready = || HarnessError::NotReady {
            node: index,
            port,
            log_tail: crate::error::log_tail(&log),
        };
        if wait_pong(port, pid, || self.is_running(index)) {
            Ok(())
        } else {
            Err(not_ready())
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Nodes::Local { nodes, .. } = &self.nodes {
            for node in lock(nodes).iter_mut() {
                if let Some(mut child) = node.child.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
    }
}

/// The mutex guards plain data; a panic elsewhere cannot leave it inconsistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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

/// Runs one command on `conn`; a server error reply becomes [`HarnessError::Command`].
pub(crate) fn run_command(
    index: usize,
    mut conn: RespConn,
    args: &[&str],
) -> Result<Reply, HarnessError> {
    let reply = conn.command(args).map_err(|source| HarnessError::Io {
        node: index,
        action: "run command",
        source,
    })?;
    match reply {
        Reply::Error(message) => Err(HarnessError::Command {
            node: index,
            command: args.first().copied().unwrap_or_default().to_owned(),
            message,
        }),
        reply => Ok(reply),
    }
}

/// Polls `port` until the server of process `pid` answers PONG (not
/// LOADING): false if the process stops running, another process answers
/// on the port (it won the bind: the caller retries on another port), or
/// `READY_TIMEOUT` passes first.
pub(crate) fn wait_pong(port: u16, pid: u32, mut is_running: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + READY_TIMEOUT;
    while Instant::now() < deadline {
        if !is_running() {
            return false;
        }
        if let Ok(mut conn) =
            RespConn::connect_addr(&format!("127.0.0.1:{port}"), Duration::from_millis(500))
        {
            if matches!(conn.command(&["PING"]), Ok(Reply::Status(s)) if s == "PONG") {
                return server_pid(&mut conn) == Some(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// The `process_id` of the server on `conn` (`INFO server`).
fn server_pid(conn: &mut RespConn) -> Option<u32> {
    let info = conn.command(&["INFO", "server"]).ok()?.as_text()?;
    info.lines()
        .find_map(|line| line.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse().ok())
}

pub(crate) fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The major version of a `redis-server` binary (0 when it cannot be told).
fn major_version(binary: &Path) -> u32 {
    Command::new(binary)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let version = text.split("v=").nth(1)?.split('.').next()?.to_owned();
            version.parse().ok()
        })
        .unwrap_or(0)
}

fn redis_command(
    binary: &Path,
    port: u16,
    dir: &Path,
    persistence: Persistence,
    debug_flag: bool,
) -> Command {
    let mut command = Command::new(binary);
    if debug_flag {
        // DEBUG SLEEP is one of the faults; Redis 7 refuses DEBUG without this.
        command.args(["--enable-debug-command", "local"]);
    }
    command
        .arg("--port")
        .arg(port.to_string())
        .args(["--bind", "127.0.0.1", "--save", "", "--daemonize", "no"])
        .args(["--protected-mode", "no"])
        .arg("--dir")
        .arg(dir)
        .args(["--logfile", "redis.log"]);
    match persistence {
        Persistence::None => command.args(["--appendonly", "no"]),
        Persistence::AofEverySec => {
            command.args(["--appendonly", "yes", "--appendfsync", "everysec"])
        }
        Persistence::AofAlways => command.args(["--appendonly", "yes", "--appendfsync", "always"]),
    };
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// `redis://[user[:pass]@]host:port[/db]` → `(host, port)`.
fn parse_host_port(url: &str) -> Option<(String, u16)> {
    let rest = url.split_once("://")?.1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let authority = rest.split('/').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    Some((host.to_owned(), port.parse().ok()?))
}

/// Writes a libfaketime timestamp file: an offset in seconds and a rate.
fn write_clock_file(file: &Path, offset_s: f64, rate: f64) -> std::io::Result<()> {
    // Written whole and renamed, so the node never reads half a line.
    let temp = file.with_extension("tmp");
    std::fs::write(&temp, format!("{offset_s:+.3} x{rate}\n"))?;
    std::fs::rename(&temp, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_host_port_accepts_credentials_and_db() {
        assert_eq!(parse_host_port("redis://u:p@h:1/0"), Some(("h".into(), 1)));
        assert_eq!(
            parse_host_port("redis://127.0.0.1:7001"),
            Some(("127.0.0.1".into(), 7001))
        );
        assert_eq!(parse_host_port("nonsense"), None);
    }

    /// Two nodes started at once can be handed the same free port: the one
    /// that lost the bind must not take the winner's PONG as its own (the
    /// cluster then listed one server twice, and a CLI test failed with
    /// "duplicate node").
    #[test]
    fn a_pong_from_another_process_on_the_port_is_not_ready() {
        let cluster = Cluster::start(1).unwrap();
        let port = cluster.port(0);
        let pid = server_pid(&mut RespConn::connect(port).unwrap()).expect("INFO names the pid");
        assert!(wait_pong(port, pid, || true));
        assert!(
            !wait_pong(port, pid + 1, || true),
            "another process's server was taken as ready"
        );
    }
}
