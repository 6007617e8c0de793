//! A `redis-server` process, whatever starts it: the binary, its command
//! line, a free port, waiting until it answers, and one command on a fresh
//! connection. Used by [`Cluster`](crate::Cluster)'s local nodes and by
//! `TlsCluster`. Beside it, what a server's start depends on: its
//! persistence (`persistence.rs`), a controlled clock (`clock.rs`:
//! libfaketime), the process-wide list of servers started
//! (`started.rs`), and a killed node's port kept from other processes
//! (`port_hold.rs`).

pub(super) mod clock;
pub(super) mod persistence;
pub(super) mod port_hold;
pub(super) mod started;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use self::persistence::Persistence;
use super::resp::{Reply, RespConn};
use crate::error::HarnessError;

/// How long a started node may take to answer PING (AOF replay included).
const READY_TIMEOUT: Duration = Duration::from_secs(10);

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

/// The major version of a `redis-server` binary (0 when it cannot be told).
pub(super) fn major_version(binary: &Path) -> u32 {
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

/// The command line of a node on `port` with its data in `dir`.
pub(super) fn redis_command(
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
    command.args(persistence.args());
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// Runs one command on `conn`; a server error reply becomes [`HarnessError::Command`].
pub(super) fn run_command(
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
pub(super) fn wait_pong(port: u16, pid: u32, mut is_running: impl FnMut() -> bool) -> bool {
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

/// How far above its port a Redis Cluster node listens for its cluster bus
/// (Redis's default, so no `--cluster-port` is needed on older servers).
pub(super) const BUS_PORT_OFFSET: u16 = 10_000;

/// A loopback port free when asked (another process may take it before it
/// is bound). Any node may be started as a Redis Cluster node, whose cluster
/// bus listens 10000 above: the port is low enough for that, and its bus
/// port was free too (a node on port 56000 or above refuses to start).
pub(super) fn free_port() -> std::io::Result<u16> {
    // Rejected ports stay bound until the end, so the OS hands out others.
    let mut rejected = Vec::new();
    for _attempt in 0..64 {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let bus_free = port
            .checked_add(BUS_PORT_OFFSET)
            .is_some_and(|bus| TcpListener::bind(("127.0.0.1", bus)).is_ok());
        if bus_free {
            return Ok(port);
        }
        rejected.push(listener);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AddrNotAvailable,
        "no free loopback port whose cluster bus port (+10000) is free too",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two nodes started at once can be handed the same free port: the one
    /// that lost the bind must not take the winner's PONG as its own (the
    /// cluster then listed one server twice, and a CLI test failed with
    /// "duplicate node").
    #[test]
    fn a_pong_from_another_process_on_the_port_is_not_ready() {
        let cluster = crate::nodes::Cluster::start(1).unwrap();
        let port = cluster.port(0);
        let pid = server_pid(&mut RespConn::connect(port).unwrap()).expect("INFO names the pid");
        assert!(wait_pong(port, pid, || true));
        assert!(
            !wait_pong(port, pid + 1, || true),
            "another process's server was taken as ready"
        );
    }

    /// A killed node's port must not be handed to a parallel test's node,
    /// which would answer in its place (a CLI test saw `list` succeed with
    /// three of five nodes killed).
    #[test]
    fn a_killed_nodes_port_is_held_until_it_starts_again() {
        let cluster = crate::nodes::Cluster::start(1).unwrap();
        let port = cluster.port(0);
        cluster.kill(0).unwrap();
        assert!(
            TcpListener::bind(("127.0.0.1", port)).is_err(),
            "the killed node's port could be bound by another server"
        );
        assert!(cluster.conn(0).is_err(), "a killed node must refuse");
        cluster.restart(0).unwrap();
        assert_eq!(
            cluster.command(0, &["PING"]).unwrap().as_text().as_deref(),
            Some("PONG")
        );
    }
}
