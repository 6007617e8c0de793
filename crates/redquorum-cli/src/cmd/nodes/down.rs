//! `redquorum nodes down`: stopping the nodes a `nodes up` started, each
//! checked to be the server it started (its pid file and process name)
//! before it is signalled.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;

use super::{Failure, SERVER_FILE, pid_file, read_state};
use crate::exit;

/// Server names `down` accepts when the state predates `SERVER_FILE`.
const KNOWN_SERVERS: &[&str] = &["redis-server", "valkey-server"];
/// How long a node may take to exit after SIGTERM before SIGKILL.
const STOP_WITHIN: Duration = Duration::from_secs(5);

pub(super) fn down(dir: &Path) -> Result<(), Failure> {
    let Some(ports) = read_state(dir) else {
        stderr_line!(
            "redquorum nodes: no nodes are up (no state in {})",
            dir.display()
        );
        return Ok(());
    };
    let server = fs::read(dir.join(SERVER_FILE))
        .ok()
        .map(|path| process_name(Path::new(&*String::from_utf8_lossy(&path))));
    // All are asked at once, then awaited together: each takes a while to
    // exit (about 1.5 s one after another on this project's 2-vCPU machine).
    let mut failures = Vec::new();
    let mut stopping = Vec::new();
    for port in &ports {
        match terminate(dir, *port, server.as_deref()) {
            Ok(Some(pid)) => stopping.push((*port, pid)),
            Ok(None) => {}
            Err(message) => failures.push(message),
        }
    }
    failures.extend(await_exit(&stopping));
    if !failures.is_empty() {
        return Err(Failure::new(exit::SOFTWARE, failures.join("; ")));
    }
    fs::remove_dir_all(dir).map_err(|e| {
        Failure::new(
            exit::SOFTWARE,
            format!("cannot remove {}: {e}", dir.display()),
        )
    })?;
    stderr_line!("redquorum nodes: {} nodes stopped", ports.len());
    Ok(())
}

/// Sends SIGTERM to the node on `port` if it is the server `up` started;
/// its pid, or `None` when there is nothing to stop.
fn terminate(dir: &Path, port: u16, server: Option<&str>) -> Result<Option<Pid>, String> {
    let Ok(text) = fs::read_to_string(pid_file(dir, port)) else {
        return Ok(None); // never started (a failed `up`), or already gone
    };
    let pid: i32 = text
        .trim()
        .parse()
        .map_err(|_| format!("bad pid file for port {port}: {text:?}"))?;
    let pid = Pid::from_raw(pid);
    // The pid may have been reused since: only signal the server `up` started.
    if !is_server(pid, server) {
        return Ok(None);
    }
    signal::kill(pid, Signal::SIGTERM).map_err(|e| format!("node on port {port}: SIGTERM: {e}"))?;
    Ok(Some(pid))
}

/// Waits up to [`STOP_WITHIN`] for the `stopping` nodes to exit, then sends
/// SIGKILL to those still there; the failures to do so.
fn await_exit(stopping: &[(u16, Pid)]) -> Vec<String> {
    let asked = Instant::now();
    let alive = |pid: Pid| signal::kill(pid, None).is_ok();
    while asked.elapsed() < STOP_WITHIN && stopping.iter().any(|(_, pid)| alive(*pid)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    stopping
        .iter()
        .filter(|(_, pid)| alive(*pid))
        .filter_map(|(port, pid)| match signal::kill(*pid, Signal::SIGKILL) {
            // It exited between the check and the signal.
            Ok(()) | Err(nix::errno::Errno::ESRCH) => None,
            Err(e) => Some(format!("node on port {port}: SIGKILL: {e}")),
        })
        .collect()
}

/// The name the kernel gives a process running `binary` (`/proc/PID/comm`:
/// the file name, cut to 15 bytes).
pub(super) fn process_name(binary: &Path) -> String {
    let name = binary
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

/// Whether `pid` is a node server: the binary `up` recorded, else a known one
/// (or its AOF check tool, which a server runs while loading).
fn is_server(pid: Pid, server: Option<&str>) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/comm")) {
        Ok(comm) => {
            let comm = comm.trim_end();
            server.is_some_and(|name| !name.is_empty() && comm == name)
                || KNOWN_SERVERS.contains(&comm)
                || comm.starts_with("redis-check")
                || comm.starts_with("valkey-check")
        }
        // No /proc (not Linux): trust the pid file if the process exists.
        Err(_) => !Path::new("/proc/self").exists() && signal::kill(pid, None).is_ok(),
    }
}
