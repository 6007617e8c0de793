//! The programs in `examples/` run against real nodes and do what their
//! docs say. Each binary is built fresh by [`example_binary`] (`cargo test
//! --all-targets` builds examples only as test harnesses).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use redquorum_harness::{Cluster, example_binary};

fn example(name: &str) -> PathBuf {
    example_binary("redquorum", name).unwrap_or_else(|e| panic!("{e}"))
}

fn run(name: &str, cluster: &Cluster, args: &[&str], env: &[(&str, &str)]) -> Output {
    run_built(&example(name), cluster, args, env)
}

/// Runs the example built at `binary` (from [`example`]), which must succeed.
fn run_built(binary: &Path, cluster: &Cluster, args: &[&str], env: &[(&str, &str)]) -> Output {
    let name = binary.display();
    let output = Command::new(binary)
        .args(args)
        .env("REDQUORUM_NODES", cluster.urls().join(","))
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run example {name}: {e}"));
    assert!(
        output.status.success(),
        "{name}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Kills (SIGKILL, by its pid) the example started here, whatever happens.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn leader_election_epochs_grow_from_term_to_term() {
    let cluster = Cluster::start(3).expect("3 nodes");
    let out = stdout(&run("leader_election", &cluster, &[], &[("TERMS", "2")]));
    let epochs: Vec<u64> = out
        .lines()
        .filter_map(|l| l.split_once("leads, epoch "))
        .map(|(_, epoch)| epoch.trim().parse().expect("a number"))
        .collect();
    assert!(epochs.len() >= 2, "{out}");
    assert!(epochs.windows(2).all(|w| w[0] < w[1]), "{out}");
    assert!(!out.contains("refused"), "{out}");
}

#[test]
fn cron_guard_runs_once_per_window() {
    // Built once, before the first run: a second `cargo build` can wait on
    // the target directory's lock (other tests build too) past the window.
    let binary = example("cron_guard");
    let cluster = Cluster::start(3).expect("3 nodes");
    let job = format!("report-{}", std::process::id());
    let first = stdout(&run_built(&binary, &cluster, &[&job, "60s"], &[]));
    assert!(first.contains(&format!("{job}: ran")), "{first}");
    // A second host firing within the window: the job does not run again.
    let first_ended = Instant::now();
    let second = stdout(&run_built(&binary, &cluster, &[&job, "60s"], &[]));
    assert!(
        first_ended.elapsed() < Duration::from_secs(60),
        "the second run ended {:?} after the first: past the window, so running again was right",
        first_ended.elapsed()
    );
    assert!(second.contains("skipped"), "{second}");
    assert!(!second.contains("running"), "{second}");
}

/// A POST over plain HTTP/1.1; the status code and body.
fn post(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("a response");
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status: {response:?}"));
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

#[test]
fn axum_handler_places_an_order_under_the_users_lock() {
    let cluster = Cluster::start(3).expect("3 nodes");
    let mut server = KillOnDrop(
        Command::new(example("axum_handler"))
            .env("REDQUORUM_NODES", cluster.urls().join(","))
            .env("ADDR", "127.0.0.1:0")
            .stdout(Stdio::piped())
            .spawn()
            .expect("the example starts"),
    );
    let mut first_line = String::new();
    BufReader::new(server.0.stdout.take().expect("piped"))
        .read_line(&mut first_line)
        .expect("the listening line");
    let addr = first_line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("{first_line:?}"))
        .to_owned();
    // The nodes may still be connecting: a 503 then is the documented answer.
    let start = Instant::now();
    let (status, body) = loop {
        let (status, body) = post(&addr, "/orders/42");
        if status != 503 || start.elapsed() > Duration::from_secs(20) {
            break (status, body);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with("order placed for user 42 (fence "),
        "{body}"
    );
}
