//! `redquorum leader`: who leads an election (its value, host, pid and owner
//! token), once, or as a stream of changes with `--watch`
//! (`Election::observe`, woken by the election's announcements).

use std::process::ExitCode;
use std::time::Duration;

use futures::StreamExt;
use redquorum::{Error, Leader};
use serde::Serialize;
use tokio::signal::unix::{SignalKind, signal};

use crate::arg_values;
use crate::cmd::common;
use crate::exit;
use crate::nodes_arg::NodesArg;

/// Exit status of a one-shot `leader` when nobody leads (as `grep` exits 1
/// when nothing matched): not an error, but a shell test can branch on it.
const NO_LEADER: u8 = 1;

/// Options of `redquorum leader`.
#[derive(Debug, clap::Args)]
pub(crate) struct LeaderArgs {
    /// The election's name.
    #[arg(value_parser = arg_values::non_empty)]
    name: String,
    /// Print JSON: one object, or one per line with --watch.
    #[arg(long)]
    json: bool,
    /// Keep running: print the leader now and again each time it changes,
    /// until interrupted.
    #[arg(long)]
    watch: bool,
    /// The electors' --ttl: with --watch, a leader that vanished without
    /// resigning is noticed within a tenth of it (a resignation or a new
    /// leader is announced and seen at once). Must be above --timeout.
    #[arg(long, default_value = "10s", value_parser = arg_values::positive_duration)]
    ttl: Duration,
    #[command(flatten)]
    nodes: common::AdminArgs,
}

/// One line of output: the election and who leads it, if anyone.
#[derive(Debug, Serialize)]
struct Report<'a> {
    name: &'a str,
    leader: Option<LeaderReport<'a>>,
}

#[derive(Debug, Serialize)]
struct LeaderReport<'a> {
    value: &'a str,
    /// Absent for a hold without owner information.
    host: Option<&'a str>,
    pid: Option<u32>,
    /// The leadership's owner token.
    token: &'a str,
    /// The leader's epoch (its fencing token), once it took it.
    epoch: Option<u64>,
}

impl<'a> Report<'a> {
    fn new(name: &'a str, leader: Option<&'a Leader>) -> Self {
        let leader = leader.map(|leader| LeaderReport {
            value: leader.value(),
            host: leader.info().map(|info| info.host()),
            pid: leader.info().map(|info| info.pid()),
            token: leader.token(),
            epoch: leader.epoch().map(|e| e.get()),
        });
        Self { name, leader }
    }

    /// One line: JSON, or `VALUE (host H, pid P, token T, epoch E)`, or
    /// `no leader`.
    fn line(&self, json: bool) -> String {
        if json {
            // Strings and numbers only: serialization cannot fail.
            return serde_json::to_string(self).unwrap_or_default();
        }
        match &self.leader {
            None => "no leader".to_owned(),
            Some(leader) => {
                let mut line = format!("{} (", leader.value);
                if let (Some(host), Some(pid)) = (leader.host, leader.pid) {
                    line.push_str(&format!("host {host}, pid {pid}, "));
                }
                line.push_str(&format!("token {}", leader.token));
                if let Some(epoch) = leader.epoch {
                    line.push_str(&format!(", epoch {epoch}"));
                }
                line.push(')');
                line
            }
        }
    }
}

pub(crate) async fn run(nodes: &NodesArg, args: LeaderArgs) -> ExitCode {
    let redlock = match common::admin_redlock(nodes, "leader", &args.nodes, Some(args.ttl)) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let election = match redlock.election(&args.name) {
        Ok(election) => election,
        Err(e) => {
            stderr_line!("redquorum leader: {e}");
            return exit::USAGE.into();
        }
    };
    let code = if args.watch {
        watch(&election, args.json).await
    } else {
        match election.leader().await {
            Ok(leader) => {
                let line = Report::new(&args.name, leader.as_ref()).line(args.json);
                match common::print_line("leader", &line) {
                    Ok(()) if leader.is_some() => ExitCode::SUCCESS,
                    Ok(()) => NO_LEADER.into(),
                    Err(code) => code,
                }
            }
            Err(e) => failed(&e),
        }
    };
    redlock.shutdown().await;
    code
}

/// Prints the leader, then each change, until SIGINT or SIGTERM (exit 0),
/// or stdout is closed (exit 0: the reader, e.g. `head -1`, has had enough).
/// A failed read is reported on stderr once per change of error, and the
/// watch goes on: an outage is something to watch through.
async fn watch(election: &redquorum::Election, json: bool) -> ExitCode {
    let (mut interrupt, mut terminate) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(interrupt), Ok(terminate)) => (interrupt, terminate),
        (Err(e), _) | (_, Err(e)) => {
            stderr_line!("redquorum leader: cannot handle signals: {e}");
            return exit::SOFTWARE.into();
        }
    };
    let changes = election.observe();
    tokio::pin!(changes);
    let mut last_error = None;
    // Bounded by the user: it ends on a signal or a closed stdout.
    loop {
        let change = tokio::select! {
            change = changes.next() => change,
            Some(()) = interrupt.recv() => return ExitCode::SUCCESS,
            Some(()) = terminate.recv() => return ExitCode::SUCCESS,
        };
        match change {
            // The stream is endless; should it end, so does the watch.
            None => return ExitCode::SUCCESS,
            Some(Ok(leader)) => {
                last_error = None;
                let line = Report::new(election.name(), leader.as_ref()).line(json);
                if let Err(code) = common::print_line("leader", &line) {
                    return code;
                }
            }
            Some(Err(error)) => {
                let text = error.to_string();
                if last_error.as_ref() != Some(&text) {
                    stderr_line!("redquorum leader: {text}; still watching");
                    last_error = Some(text);
                }
            }
        }
    }
}

/// 69 when too few nodes could be read; 70 for anything else.
fn failed(error: &Error) -> ExitCode {
    stderr_line!("redquorum leader: {error}");
    match error {
        Error::Unavailable { .. } => exit::UNAVAILABLE.into(),
        _ => exit::SOFTWARE.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_leader_prints_null_in_json_and_says_so_in_text() {
        let report = Report::new("jobs", None);
        assert_eq!(report.line(true), r#"{"name":"jobs","leader":null}"#);
        assert_eq!(report.line(false), "no leader");
    }
}
