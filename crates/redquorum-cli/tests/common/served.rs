//! A running `redquorum serve` for the tests that drive it over HTTP
//! (`serve.rs`, `serve_sessions.rs`), and reading its answers.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use redquorum_harness::Cluster;
use reqwest::StatusCode;
use serde_json::Value;

use super::lock_key;

pub(crate) const TOKEN: &str = "s3cret-token-for-tests";

/// A running `redquorum serve` on a free port, stopped (SIGTERM, then
/// waited for) when dropped.
pub(crate) struct Served {
    pub(crate) child: Child,
    pub(crate) url: String,
    pub(crate) http: reqwest::Client,
}

impl Served {
    /// Serves `nodes` with the test token, plus `args`.
    pub(crate) fn start(nodes: &Cluster, args: &[&str]) -> Self {
        Self::start_with(nodes, Some(TOKEN), args)
    }

    pub(crate) fn start_with(nodes: &Cluster, token: Option<&str>, args: &[&str]) -> Self {
        let mut command = super::redquorum(nodes);
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args);
        match token {
            Some(token) => command.env("REDQUORUM_SERVE_TOKEN", token),
            None => command.env_remove("REDQUORUM_SERVE_TOKEN"),
        };
        let mut child = (command.stdout(Stdio::piped()).stderr(Stdio::inherit()))
            .spawn()
            .expect("start redquorum serve");
        // Its first line is the address it took; a reader thread bounds the wait.
        let stdout = child.stdout.take().expect("stdout");
        let (sent, line) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = BufReader::new(stdout).read_line(&mut first);
            let _ = sent.send(first);
        });
        let url = match line.recv_timeout(Duration::from_secs(30)) {
            Ok(url) if url.starts_with("http://") || url.starts_with("https://") => {
                url.trim().to_owned()
            }
            other => {
                let _ = child.kill();
                panic!("serve printed no address: {other:?}");
            }
        };
        Self {
            child,
            url,
            http: reqwest::Client::new(),
        }
    }

    /// `method path` with `body` (JSON) and the test token: the status and
    /// the JSON answer.
    pub(crate) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = (self.http.request(method, format!("{}{path}", self.url)))
            .bearer_auth(TOKEN)
            .timeout(Duration::from_secs(60));
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer(request.send().await.expect("the service answers")).await
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    /// `post` in a task of its own (a request that waits).
    pub(crate) fn post_in_background(
        &self,
        path: &str,
        body: Value,
    ) -> tokio::task::JoinHandle<(StatusCode, Value)> {
        let request = (self.http.post(format!("{}{path}", self.url)))
            .bearer_auth(TOKEN)
            .json(&body)
            .timeout(Duration::from_secs(60));
        tokio::spawn(
            async move { answer(request.send().await.expect("the service answers")).await },
        )
    }

    pub(crate) async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(reqwest::Method::GET, path, None).await
    }
}

impl Served {
    /// Kills the service (SIGKILL) and waits until it is gone.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        super::wait_within(&mut self.child, Duration::from_secs(20));
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        super::wait_within(&mut self.child, Duration::from_secs(20));
    }
}

pub(crate) async fn answer(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.expect("a body");
    let value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {text:?}"));
    (status, value)
}

/// The owner token in `resource`'s plain lock key on each node (None where absent).
pub(crate) fn owners(nodes: &Cluster, resource: &str) -> Vec<Option<String>> {
    (0..nodes.len())
        .map(|i| {
            nodes
                .command(i, &["GET", &lock_key(resource)])
                .unwrap()
                .as_text()
        })
        .collect()
}

/// The owner token inside a lease (`rq1:lock:<owner>:...`).
pub(crate) fn owner_of(lease: &str) -> String {
    lease.split(':').nth(2).expect("a lease").to_owned()
}

pub(crate) fn lease_of(body: &Value) -> String {
    body["lease"]
        .as_str()
        .unwrap_or_else(|| panic!("no lease: {body}"))
        .to_owned()
}
