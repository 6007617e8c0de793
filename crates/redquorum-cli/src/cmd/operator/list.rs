//! `redquorum list`: the resources held under a name prefix, as a quorum of
//! nodes sees them (`Redlock::list`: a bounded SCAN of every node).

use std::process::ExitCode;

use redquorum::Error;
use serde::Serialize;

use crate::arg_values;
use crate::cmd::common;
use crate::exit;
use crate::nodes_arg::NodesArg;

/// Options of `redquorum list`.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// Only resources whose name starts with this [default: all].
    #[arg(default_value = "", hide_default_value = true)]
    prefix: String,
    /// At most this many names (also bounds the scan of each node).
    #[arg(long, default_value = "100", value_parser = arg_values::count)]
    limit: usize,
    /// Print one JSON object instead of one name per line.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    nodes: common::AdminArgs,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    prefix: &'a str,
    limit: usize,
    /// The limit was reached: there may be more.
    truncated: bool,
    resources: &'a [String],
}

pub(crate) async fn run(nodes: &NodesArg, args: ListArgs) -> ExitCode {
    let redlock = match common::admin_redlock(nodes, "list", &args.nodes, None) {
        Ok(redlock) => redlock,
        Err(code) => return code,
    };
    let code = match redlock.list(&args.prefix, args.limit).await {
        Ok(resources) => {
            let truncated = resources.len() >= args.limit;
            if args.json {
                let report = Report {
                    prefix: &args.prefix,
                    limit: args.limit,
                    truncated,
                    resources: &resources,
                };
                // Strings and numbers only: serialization cannot fail.
                let json = serde_json::to_string(&report).unwrap_or_default();
                if let Err(code) = common::print_line("list", &json) {
                    return code;
                }
            } else {
                for resource in &resources {
                    if let Err(code) = common::print_line("list", resource) {
                        return code;
                    }
                }
                if truncated {
                    stderr_line!(
                        "redquorum list: stopped at --limit {}; there may be more",
                        args.limit
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            stderr_line!("redquorum list: {error}");
            ExitCode::from(match error {
                Error::Unavailable { .. } => exit::UNAVAILABLE,
                _ => exit::SOFTWARE,
            })
        }
    };
    redlock.shutdown().await;
    code
}
