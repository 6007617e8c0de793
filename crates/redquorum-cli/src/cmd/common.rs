//! What `exec` and `status` share: the node list from `--nodes`, and a `Redlock` on it.

use std::process::ExitCode;
use std::time::Duration;

use redquorum::Redlock;

use crate::exit;
use crate::nodes_arg::NodesArg;

/// The node URLs given with `--nodes`/`REDQUORUM_NODES`, or a usage error
/// saying how to get some (these commands make no sense on throwaway nodes).
pub(crate) fn given_urls(nodes: &NodesArg, command: &str) -> Result<Vec<String>, ExitCode> {
    let urls: Vec<String> = nodes
        .0
        .iter()
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty())
        .collect();
    if urls.is_empty() {
        eprintln!(
            "redquorum {command}: no nodes: pass --nodes redis://host:port,... or set REDQUORUM_NODES \
             (for local development: eval \"$(redquorum nodes up)\")"
        );
        return Err(exit::USAGE.into());
    }
    Ok(urls)
}

/// A `Redlock` on the given nodes; a bad configuration is a usage error.
pub(crate) fn redlock(
    nodes: &NodesArg,
    ttl: Duration,
    key_prefix: &str,
) -> Result<Redlock, ExitCode> {
    let urls = given_urls(nodes, "exec")?;
    Redlock::builder()
        .nodes(&urls)
        .ttl(ttl)
        .key_prefix(key_prefix)
        .build()
        .map_err(|e| {
            eprintln!("redquorum exec: {e}");
            ExitCode::from(exit::USAGE)
        })
}
