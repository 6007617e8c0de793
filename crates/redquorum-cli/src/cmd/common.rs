//! What `exec` and `status` share: the node list from `--nodes`.

use std::process::ExitCode;

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
