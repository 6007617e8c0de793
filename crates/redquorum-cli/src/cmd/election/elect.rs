//! `redquorum elect`: campaign to lead an election, then run a command while
//! leader, on exec's run path (`exec::Runner`: the same guard, stop before
//! the lease ends, release, exit statuses). The command's fencing token is
//! the leader's epoch.

use std::process::ExitCode;
use std::time::Duration;

use redquorum::{Election, Error};

use crate::arg_values;
use crate::cmd::exec::{LeaseArgs, Runner};
use crate::exit;
use crate::guard;
use crate::nodes_arg::NodesArg;

/// Options of `redquorum elect`.
#[derive(Debug, clap::Args)]
pub(crate) struct ElectArgs {
    #[command(flatten)]
    pub(crate) lease: LeaseArgs,
    /// Give up if not leader within this long (exit 75, or 69 when a quorum
    /// cannot be reached); 0s makes one attempt [default: campaign as long as
    /// it takes].
    #[arg(long, value_parser = arg_values::duration)]
    wait: Option<Duration>,
    /// The leader's value, which `redquorum leader` shows (an address, a
    /// host name) [default: HOSTNAME:PID].
    #[arg(long)]
    value: Option<String>,
    /// The election's name.
    #[arg(value_parser = arg_values::non_empty)]
    name: String,
    #[command(flatten)]
    command: guard::CommandArgs,
}

pub(crate) async fn run(nodes: &NodesArg, args: ElectArgs) -> ExitCode {
    let runner = match Runner::new(nodes, &args.lease, "elect") {
        Ok(runner) => runner,
        Err(code) => return code,
    };
    // With --wait, the handle's wait is the campaign's (`campaign_waiting`).
    let redlock = match runner.waiting(args.wait) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let election = match redlock.election(&args.name) {
        Ok(election) => election,
        Err(error) => return runner.not_acquired(&error),
    };
    let value = args.value.unwrap_or_else(default_value);
    let leadership = match args.wait {
        None => election.campaign(&value).await,
        Some(wait) if wait.is_zero() => election.try_campaign(&value).await,
        Some(wait) => match election.campaign_waiting(&value).await {
            // The nodes could not take a vote: 69, as for `--wait 0s` (below).
            Err(Error::WaitTimeout { last, .. }) if !matches!(*last, Error::Unavailable { .. }) => {
                return not_elected(&runner, &election, wait).await;
            }
            other => other,
        },
    };
    runner.run_acquired(leadership, &args.command.command).await
}

/// After `--wait` ran out with the last attempt refused (not for want of
/// nodes): says who leads and exits 75, or 69 when a quorum cannot be read
/// now.
async fn not_elected(runner: &Runner, election: &Election, wait: Duration) -> ExitCode {
    let waited = humantime::format_duration(wait);
    let (code, why) = match election.leader().await {
        Ok(Some(leader)) => {
            let who = match leader.info() {
                Some(info) => format!(
                    "{:?} leads (host {}, pid {})",
                    leader.value(),
                    info.host(),
                    info.pid()
                ),
                None => format!("{} leads", leader.token()),
            };
            (exit::TEMPFAIL, who)
        }
        Ok(None) => (exit::TEMPFAIL, "no leader was elected".to_owned()),
        Err(error @ Error::Unavailable { .. }) => (exit::UNAVAILABLE, error.to_string()),
        Err(error) => (exit::SOFTWARE, error.to_string()),
    };
    if !(runner.is_quiet() && code == exit::TEMPFAIL) {
        stderr_line!(
            "redquorum elect: not leader of {:?} within {waited}: {why}",
            election.name()
        );
    }
    ExitCode::from(code)
}

/// `HOSTNAME:PID`: tells the electors apart, also several on one host.
fn default_value() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    format!("{host}:{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_value_is_host_colon_pid() {
        let value = default_value();
        let (host, pid) = value.rsplit_once(':').expect("HOST:PID");
        assert!(!host.is_empty());
        assert_eq!(pid, std::process::id().to_string());
    }
}
