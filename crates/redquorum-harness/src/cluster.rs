//! `Cluster`: N real `redis-server` processes on loopback, and their lifecycle faults.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::HarnessError;
use crate::resp::{Reply, RespConn};

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
}

/// Where the nodes come from.
#[derive(Debug)]
enum Nodes {
    /// Started here; process control available.
    Local {
        binary: PathBuf,
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
        let binary = redis_server_path()?;
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
            nodes.push(LocalNode {
                port: 0,
                dir,
                child: None,
            });
        }
        let cluster = Self {
            nodes: Nodes::Local {
                binary,
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
        let reply = self
            .conn(index)?
            .command(args)
            .map_err(|source| HarnessError::Io {
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
        self.spawn(index)?;
        self.wait_ready(index)
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
            persistence,
            ..
        } = &self.nodes
        else {
            return Err(HarnessError::External(index));
        };
        let mut nodes = self.local(index)?;
        let node = &mut nodes[index];
        let child = redis_command(binary, node.port, &node.dir, *persistence)
            .spawn()
            .map_err(|source| HarnessError::Io {
                node: index,
                action: "spawn redis-server",
                source,
            })?;
        node.child = Some(child);
        Ok(())
    }

    /// Waits until node `index` answers PING (not LOADING).
    fn wait_ready(&self, index: usize) -> Result<(), HarnessError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let (port, log) = {
            let nodes = self.local(index)?;
            (nodes[index].port, nodes[index].dir.join("redis.log"))
        };
        let not_ready = || HarnessError::NotReady {
            node: index,
            port,
            log: log.display().to_string(),
        };
        while Instant::now() < deadline {
            if !self.is_running(index) {
                return Err(not_ready());
            }
            if let Ok(mut conn) =
                RespConn::connect_addr(&format!("127.0.0.1:{port}"), Duration::from_millis(500))
            {
                if let Ok(Reply::Status(s)) = conn.command(&["PING"]) {
                    if s == "PONG" {
                        return Ok(());
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Err(not_ready())
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

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn redis_command(binary: &Path, port: u16, dir: &Path, persistence: Persistence) -> Command {
    let mut command = Command::new(binary);
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
}
