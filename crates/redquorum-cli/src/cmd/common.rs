//! What the commands that talk to the nodes share: the node list from
//! `--nodes`, and a `Redlock` builder on it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use redquorum::{Redlock, RedlockBuilder, Ticket};

use crate::arg_values;
use crate::exit;
use crate::nodes_arg::NodesArg;

/// The node URLs given with `--nodes`/`REDQUORUM_NODES`, or a usage error
/// saying how to get some (these commands make no sense on throwaway nodes).
pub(crate) fn given_urls(nodes: &NodesArg, command: &str) -> Result<Vec<String>, ExitCode> {
    if nodes.is_empty() {
        stderr_line!(
            "redquorum {command}: no nodes: pass --nodes redis://host:port,... or set REDQUORUM_NODES \
             (for local development: eval \"$(redquorum nodes up)\")"
        );
        return Err(exit::USAGE.into());
    }
    Ok(nodes.urls().to_vec())
}

/// A `RedlockBuilder` on `urls` with the key prefix and, for `rediss://`
/// nodes signed by a private CA, that CA as the trust root (a PEM or DER
/// file). An error message (never with a password) for an unreadable file.
pub(crate) fn builder(
    urls: &[String],
    key_prefix: &str,
    tls_ca: Option<&Path>,
) -> Result<RedlockBuilder, String> {
    let mut builder = Redlock::builder().nodes(urls).key_prefix(key_prefix);
    if let Some(path) = tls_ca {
        let certificate = std::fs::read(path)
            .map_err(|e| format!("cannot read --tls-ca {}: {e}", path.display()))?;
        builder = builder.tls_root_certificate(certificate);
    }
    Ok(builder)
}

/// The TTL of a `Redlock` that takes no lease (the builder requires one).
const NO_LEASE_TTL: Duration = Duration::from_secs(10);

/// How the commands that take no lease of their own (`leader`, `release`,
/// `list`) reach the nodes.
#[derive(Debug, clap::Args)]
pub(crate) struct AdminArgs {
    /// Prefix of the lock keys on each node.
    #[arg(long, default_value = "lock:")]
    key_prefix: String,
    /// Connect and answer timeout per node.
    #[arg(long, default_value = "500ms", value_parser = arg_values::positive_duration)]
    timeout: Duration,
    /// Trust this CA certificate (PEM or DER) for rediss:// nodes instead of
    /// the system's roots.
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
}

/// The `Redlock` of a command that takes no lease of its own, on the given
/// nodes with `args`. `ttl` only paces `Election::observe` and must be above
/// `--timeout`; without it, one that passes the builder's checks. Any bad
/// option is a usage error, reported here.
pub(crate) fn admin_redlock(
    nodes: &NodesArg,
    command: &str,
    args: &AdminArgs,
    ttl: Option<Duration>,
) -> Result<Redlock, ExitCode> {
    let ttl = ttl.unwrap_or(NO_LEASE_TTL.max(args.timeout * 2));
    let usage = |message: String| {
        stderr_line!("redquorum {command}: {message}");
        ExitCode::from(exit::USAGE)
    };
    let urls = given_urls(nodes, command)?;
    builder(&urls, &args.key_prefix, args.tls_ca.as_deref())
        .map_err(usage)?
        .ttl(ttl)
        .node_timeout(args.timeout)
        .build()
        .map_err(|e| usage(e.to_string()))
}

/// Writes `line` to stdout and flushes it (a reader at the other end of a
/// pipe sees it at once), without `println!`'s panic on a closed pipe.
/// `Err` is the exit status to end with: 0 when the reader has gone (as
/// `redquorum leader --watch | head -1` does), 70 for any other failure.
pub(crate) fn print_line(command: &str, line: &str) -> Result<(), ExitCode> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(ExitCode::SUCCESS),
        Err(e) => {
            stderr_line!("redquorum {command}: cannot write to stdout: {e}");
            Err(exit::SOFTWARE.into())
        }
    }
}

/// The lease ticket `text` of a plain lock (the CLI's commands take no
/// other kind), or exit 64 with what is wrong, never the ticket itself (a
/// capability).
pub(crate) fn plain_ticket(text: &str, command: &str) -> Result<Ticket, ExitCode> {
    match text.parse::<Ticket>() {
        Err(error) => {
            stderr_line!("redquorum {command}: {error}");
            Err(exit::USAGE.into())
        }
        Ok(ticket) if ticket.kind() != "lock" => {
            stderr_line!(
                "redquorum {command}: a {} ticket: the command takes a plain lock's (redquorum lock)",
                ticket.kind()
            );
            Err(exit::USAGE.into())
        }
        Ok(ticket) => Ok(ticket),
    }
}
