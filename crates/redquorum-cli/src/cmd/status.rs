//! `redquorum status`: who holds a resource's lock on each node, of which
//! kind, for how long, and whether each node's vote counts.
//!
//! Built on the library, so it works wherever a lock does (TLS, ACL users)
//! and reads every lock kind: `Redlock::inspect` reads the lock record on
//! every node (read-only, no lock taken; it shows what is really there,
//! including holds left by a holder that crashed), and `Redlock::health`
//! gives each node's health as the library's own probes see it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::arg_values;
use crate::cmd::common;
use crate::exit;
use crate::nodes_arg::NodesArg;

mod report;

use report::Report;

/// The lease TTL of the inspecting `Redlock` when no `--max-ttl` is given.
/// It takes no lock, so this only has to pass the builder's checks.
const INSPECT_TTL: Duration = Duration::from_secs(3600);

/// Options of `redquorum status`.
#[derive(Debug, clap::Args)]
pub(crate) struct StatusArgs {
    /// The resource to inspect.
    #[arg(value_parser = arg_values::non_empty)]
    resource: String,
    /// Print JSON instead of a table (stdout is then pure JSON).
    #[arg(long)]
    json: bool,
    /// Prefix of the lock keys on each node.
    #[arg(long, default_value = "lock:")]
    key_prefix: String,
    /// Connect and read timeout per node.
    #[arg(long, default_value = "500ms", value_parser = arg_values::positive_duration)]
    timeout: Duration,
    /// The longest lock TTL your clients use (their `RedlockBuilder::max_ttl`).
    /// With it, a node that is not durable (no AOF `appendfsync always`) and
    /// has been up for less than this is reported as refused: it may have
    /// forgotten keys it granted before a restart. Without it that rule is not
    /// checked. Must be longer than --timeout.
    #[arg(long, value_parser = arg_values::duration)]
    max_ttl: Option<Duration>,
    /// A PEM or DER CA certificate to trust for `rediss://` nodes signed by a
    /// private CA (default: the system roots).
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
}

pub(crate) async fn run(nodes: &NodesArg, args: StatusArgs) -> ExitCode {
    let usage = |message: String| {
        stderr_line!("redquorum status: {message}");
        ExitCode::from(exit::USAGE)
    };
    let urls = match common::given_urls(nodes, "status") {
        Ok(urls) => urls,
        Err(code) => return code,
    };
    if let Some(max_ttl) = args.max_ttl.filter(|m| *m <= args.timeout) {
        return usage(format!(
            "--max-ttl {} must be longer than --timeout {}",
            humantime::format_duration(max_ttl),
            humantime::format_duration(args.timeout)
        ));
    }
    let builder = match common::builder(&urls, &args.key_prefix, args.tls_ca.as_deref()) {
        Ok(builder) => builder,
        Err(message) => return usage(message),
    };
    let mut builder = builder
        .ttl(args.max_ttl.unwrap_or(INSPECT_TTL))
        .node_timeout(args.timeout);
    if let Some(max_ttl) = args.max_ttl {
        builder = builder.max_ttl(max_ttl);
    }
    let redlock = match builder.build() {
        Ok(redlock) => redlock,
        Err(e) => return usage(e.to_string()),
    };
    // The first call waits for the connections and one probe of every node.
    let (inspection, health) = tokio::join!(redlock.inspect(&args.resource), redlock.health());
    let inspection = match inspection {
        Ok(inspection) => inspection,
        Err(e) => return usage(e.to_string()),
    };
    let report = Report::new(&redlock, &inspection, &health, args.max_ttl);
    if args.json {
        match serde_json::to_string(&report) {
            Ok(json) => println!("{json}"),
            Err(e) => {
                stderr_line!("redquorum status: {e}");
                return exit::SOFTWARE.into();
            }
        }
    } else {
        print!("{}", report.table());
    }
    redlock.shutdown().await;
    if report.reachable < report.quorum {
        exit::UNAVAILABLE.into()
    } else {
        ExitCode::SUCCESS
    }
}
