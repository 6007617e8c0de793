//! Nodes given by URL (`REDQUORUM_NODES`, a command line's `--nodes`): the
//! harness knows their addresses only, so process faults are refused on
//! them ([`HarnessError::External`]) while network and command faults work.

use super::cluster::{Cluster, Nodes};
use crate::error::HarnessError;

impl Cluster {
    /// Uses `REDQUORUM_NODES` (comma-separated URLs) when set, else starts `n` local nodes.
    ///
    /// # Errors
    ///
    /// A malformed `REDQUORUM_NODES`, or local start-up failure.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::from_env_or_start(3).unwrap();
    /// assert!(cluster.len() >= 1);
    /// ```
    pub fn from_env_or_start(n: usize) -> Result<Self, HarnessError> {
        match std::env::var("REDQUORUM_NODES") {
            Ok(list) if !list.trim().is_empty() => {
                let urls: Vec<String> = list.split(',').map(|u| u.trim().to_owned()).collect();
                for url in &urls {
                    parse_host_port(url).ok_or_else(|| HarnessError::BadNodeUrl(url.clone()))?;
                }
                Ok(Self {
                    nodes: Nodes::External { urls },
                })
            }
            _ => Self::start(n),
        }
    }

    /// Uses the given nodes (`redis://host:port` URLs) without process control.
    ///
    /// # Errors
    ///
    /// [`HarnessError::BadNodeUrl`] for an entry without `host:port`.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::external(vec!["redis://127.0.0.1:7001".into()]).unwrap();
    /// assert!(cluster.is_external());
    /// assert!(cluster.kill(0).is_err());
    /// ```
    pub fn external(urls: Vec<String>) -> Result<Self, HarnessError> {
        for url in &urls {
            parse_host_port(url).ok_or_else(|| HarnessError::BadNodeUrl(url.clone()))?;
        }
        Ok(Self {
            nodes: Nodes::External { urls },
        })
    }
}

/// `redis://[user[:pass]@]host:port[/db]` → `(host, port)`.
pub(super) fn parse_host_port(url: &str) -> Option<(String, u16)> {
    let rest = url.split_once("://")?.1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let authority = rest.split('/').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    Some((host.to_owned(), port.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_host_port_accepts_credentials_and_db() {
        assert_eq!(parse_host_port("redis://u:p@h:1/0"), Some(("h".into(), 1)));
        assert_eq!(
            parse_host_port("redis://127.0.0.1:7001"),
            Some(("127.0.0.1".into(), 7001))
        );
        assert_eq!(parse_host_port("nonsense"), None);
    }
}
