//! `redquorum nodes up|down`: a local set of `redis-server` nodes for
//! development that outlives the command (daemonized, with pid files), and a
//! state file so `down` finds them again.
//!
//! By default these nodes keep nothing on disk: fine for development, not
//! for the safety assumption that a node never forgets a granted key
//! (docs/safety.md). With `--durable` each node writes an AOF fsynced on
//! every write, so the library counts it as durable (its votes count at
//! once, also under the delayed-restart rule). With `--cluster S` each
//! master is a local Redis Cluster of S shards (`nodes/cluster.rs`);
//! stopping them is `nodes/down.rs`.

mod cluster;
mod down;

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use redquorum_harness::RespConn;

use crate::exit;
use cluster::Layout;
use down::down;
#[cfg(test)]
use down::process_name;

/// The state file inside the state directory: one port per line.
const STATE_FILE: &str = "nodes";
/// The file inside the state directory that holds the path of the server
/// binary `up` started (`redis-server`, `valkey-server`, ...), so `down`
/// knows which process name a pid file's pid must have.
const SERVER_FILE: &str = "server";
/// How long a node may take to answer PING after starting.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Options of `redquorum nodes`.
#[derive(Debug, clap::Args)]
pub(crate) struct NodesArgs {
    /// Where the state file, pid files and logs live
    /// [default: $XDG_RUNTIME_DIR/redquorum-nodes, else a per-user dir in the temp dir].
    #[arg(long, env = "REDQUORUM_NODES_DIR", global = true)]
    dir: Option<PathBuf>,
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Start local nodes in the background and print the REDQUORUM_NODES line to export.
    Up {
        /// How many nodes (odd, as Redlock wants).
        #[arg(short = 'n', long, default_value_t = 5)]
        count: u16,
        /// The first node's port (1 or above); the others follow it.
        #[arg(long, default_value_t = 7301, value_parser = clap::value_parser!(u16).range(1..))]
        base_port: u16,
        /// Persist every write before acknowledging it (AOF with
        /// `appendfsync always`): the nodes then count as durable, so a
        /// client with `max_ttl` set can lock at once instead of waiting
        /// `max_ttl` for fresh nodes. `down` deletes the data.
        #[arg(long)]
        durable: bool,
        /// Make each node a local Redis Cluster of S shards (1 to 16), the
        /// slots split evenly: prints `redis-cluster://` URLs, one per master.
        #[arg(long, value_name = "S", value_parser = crate::arg_values::shards)]
        cluster: Option<u16>,
        /// With --cluster: give each shard's primary R replicas (0 or 1).
        #[arg(long, value_name = "R", requires = "cluster", value_parser = clap::value_parser!(u16).range(0..=1))]
        replicas: Option<u16>,
    },
    /// Stop the nodes started by `up` and remove their state.
    Down,
}

/// Why `up` or `down` failed, with the exit status it maps to.
struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code,
        }
    }
}

pub(crate) fn run(args: NodesArgs) -> ExitCode {
    let dir = args.dir.unwrap_or_else(default_dir);
    let result = match args.action {
        Action::Up {
            count,
            base_port,
            durable,
            cluster,
            replicas,
        } => {
            let layout = cluster.map(|shards| Layout {
                shards,
                replicas: replicas.unwrap_or(0),
            });
            up(&dir, count, base_port, durable, layout)
        }
        Action::Down => down(&dir),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            stderr_line!("redquorum nodes: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

fn default_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(runtime) if !runtime.is_empty() => PathBuf::from(runtime).join("redquorum-nodes"),
        _ => {
            let user = std::env::var("USER").unwrap_or_else(|_| "default".to_owned());
            std::env::temp_dir().join(format!("redquorum-nodes-{user}"))
        }
    }
}

fn up(
    dir: &Path,
    count: u16,
    base_port: u16,
    durable: bool,
    layout: Option<Layout>,
) -> Result<(), Failure> {
    if count == 0 || count.is_multiple_of(2) {
        return Err(Failure::new(
            exit::USAGE,
            format!("-n {count}: use an odd number of nodes (1, 3, 5, ...)"),
        ));
    }
    let processes = count.saturating_mul(layout.map_or(1, Layout::processes));
    let Some(last) = base_port.checked_add(processes - 1) else {
        return Err(Failure::new(exit::USAGE, "--base-port too high for -n"));
    };
    let ports: Vec<u16> = (base_port..=last).collect();
    if layout.is_some() {
        Layout::check_bus_range(last)?;
    }
    if let Some(existing) = read_state(dir) {
        if !existing.is_empty() && existing.iter().all(|port| ping(*port)) {
            stderr_line!(
                "redquorum nodes: already up (state in {}); `redquorum nodes down` stops them",
                dir.display()
            );
            println!("{}", export_line(dir, &existing));
            return Ok(());
        }
        return Err(Failure::new(
            exit::SOFTWARE,
            format!(
                "stale state in {} (some nodes are not answering): run `redquorum nodes down` first",
                dir.display()
            ),
        ));
    }
    let server = redquorum_harness::redis_server_path()
        .map_err(|e| Failure::new(exit::UNAVAILABLE, e.to_string()))?;
    if let Some(port) = ports
        .iter()
        .find(|p| TcpListener::bind(("127.0.0.1", **p)).is_err())
    {
        return Err(Failure::new(
            exit::UNAVAILABLE,
            format!("port {port} is in use: pick other ports with --base-port"),
        ));
    }
    if layout.is_some() {
        Layout::check_bus_ports_free(&ports)?;
    }
    fs::create_dir_all(dir).map_err(|e| {
        Failure::new(
            exit::SOFTWARE,
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    // Write the state first, so `down` can clean up even if a start fails half-way.
    write_state(dir, &ports)?;
    fs::write(dir.join(SERVER_FILE), server.as_os_str().as_encoded_bytes()).map_err(|e| {
        Failure::new(
            exit::SOFTWARE,
            format!("cannot write state in {}: {e}", dir.display()),
        )
    })?;
    if let Some(layout) = layout {
        layout.write(dir)?;
    }
    let extra = layout.map_or(&[][..], |_| redquorum_harness::redis_cluster_args());
    let started = ports
        .iter()
        .try_for_each(|&port| start_node(&server, dir, port, durable, extra))
        .and_then(|()| layout.map_or(Ok(()), |layout| layout.form(&ports)));
    if let Err(failure) = started {
        let _ = down(dir);
        return Err(failure);
    }
    let durability = if durable {
        "durable (AOF, fsync always)"
    } else {
        "non-durable"
    };
    let what = match layout {
        None => format!("{count} {durability} nodes"),
        Some(Layout { shards, replicas }) => format!(
            "{count} {durability} masters, each a Redis Cluster of {shards} shards \
             ({replicas} replica per shard; {processes} processes),"
        ),
    };
    stderr_line!(
        "redquorum nodes: {what} up on 127.0.0.1:{base_port}-{last} (state in {}); export this:",
        dir.display()
    );
    println!("{}", export_line(dir, &ports));
    Ok(())
}

fn start_node(
    server: &Path,
    dir: &Path,
    port: u16,
    durable: bool,
    extra: &[&str],
) -> Result<(), Failure> {
    let node_dir = dir.join(format!("node-{port}"));
    fs::create_dir_all(&node_dir).map_err(|e| {
        Failure::new(
            exit::SOFTWARE,
            format!("cannot create {}: {e}", node_dir.display()),
        )
    })?;
    let status = Command::new(server)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--daemonize", "yes", "--save", ""])
        .args(if durable {
            ["--appendonly", "yes", "--appendfsync", "always"].as_slice()
        } else {
            ["--appendonly", "no"].as_slice()
        })
        .arg("--dir")
        .arg(&node_dir)
        .arg("--pidfile")
        .arg(pid_file(dir, port))
        .arg("--logfile")
        .arg(node_dir.join("redis.log"))
        .args(extra)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| {
            Failure::new(
                exit::SOFTWARE,
                format!("cannot run {}: {e}", server.display()),
            )
        })?;
    if !status.success() {
        return Err(Failure::new(
            exit::SOFTWARE,
            format!("redis-server on port {port} failed to start ({status})"),
        ));
    }
    let started = Instant::now();
    while started.elapsed() < READY_WITHIN {
        if ping(port) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(Failure::new(
        exit::SOFTWARE,
        format!(
            "node on port {port} did not answer PING within {READY_WITHIN:?}; see {}",
            node_dir.join("redis.log").display()
        ),
    ))
}

fn pid_file(dir: &Path, port: u16) -> PathBuf {
    dir.join(format!("node-{port}.pid"))
}

fn ping(port: u16) -> bool {
    RespConn::connect_addr(&format!("127.0.0.1:{port}"), Duration::from_millis(500))
        .and_then(|mut conn| conn.command(&["PING"]))
        .is_ok_and(|reply| reply.as_text().as_deref() == Some("PONG"))
}

fn read_state(dir: &Path) -> Option<Vec<u16>> {
    let text = fs::read_to_string(dir.join(STATE_FILE)).ok()?;
    Some(text.lines().filter_map(|l| l.trim().parse().ok()).collect())
}

fn write_state(dir: &Path, ports: &[u16]) -> Result<(), Failure> {
    let text: String = ports.iter().map(|p| format!("{p}\n")).collect();
    fs::write(dir.join(STATE_FILE), text).map_err(|e| {
        Failure::new(
            exit::SOFTWARE,
            format!("cannot write state in {}: {e}", dir.display()),
        )
    })
}

/// The line to export: one URL per master (per port for plain nodes; per
/// cluster, its primaries as seeds, when the state dir holds a layout).
fn export_line(dir: &Path, ports: &[u16]) -> String {
    let urls: Vec<String> = match Layout::read(dir) {
        Some(layout) => layout.urls(ports),
        None => ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect(),
    };
    format!("export REDQUORUM_NODES={}", urls.join(","))
}

#[cfg(test)]
mod tests;
