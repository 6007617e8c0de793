//! What `exec` and `status` share: the node list from `--nodes`, and a
//! `Redlock` builder on it.

use std::path::Path;
use std::process::ExitCode;

use redquorum::{Redlock, RedlockBuilder};

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
