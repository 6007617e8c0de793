//! A `redquorum serve` this process starts on its own nodes (the torture's
//! serve holders, `redquorum bench --serve`): this very binary, on a free
//! loopback port, without tokens; it stops when this process ends, killed
//! or not (its stdin is a pipe it stops on), or when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `redquorum serve`, killed and waited for when dropped.
#[derive(Debug)]
pub(crate) struct ServeChild {
    child: Child,
    /// Where it listens: `http://127.0.0.1:PORT`.
    pub(crate) url: String,
}

impl ServeChild {
    /// Serves `urls`' nodes with the further `serve` options `args`;
    /// `configure` may change the command (its environment) before it
    /// starts. `Err` says why it did not start.
    pub(crate) fn start(
        urls: &[String],
        args: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> Result<Self, String> {
        let me = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut command = Command::new(me);
        command
            .args(["--nodes", &urls.join(","), "-q", "serve"])
            .args([
                "--listen",
                "127.0.0.1:0",
                "--allow-unauthenticated-loopback",
            ])
            .arg("--stop-on-stdin-end")
            .args(args)
            .env_remove("REDQUORUM_SERVE_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        configure(&mut command);
        let mut child = command.spawn().map_err(|e| e.to_string())?;
        // Its first line is the address it took; a thread bounds the wait.
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (sent, line) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = BufReader::new(stdout).read_line(&mut first);
            let _ = sent.send(first);
        });
        match line.recv_timeout(Duration::from_secs(30)) {
            Ok(url) if url.starts_with("http://") => Ok(Self {
                child,
                url: url.trim().to_owned(),
            }),
            other => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!("the service printed no address: {other:?}"))
            }
        }
    }
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
