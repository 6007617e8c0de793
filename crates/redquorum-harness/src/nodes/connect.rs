//! Where a cluster's nodes are and how to reach them: URLs, ports,
//! `host:port`, a fresh blocking connection, one command.

use std::time::Duration;

use super::cluster::{Cluster, Nodes, lock};
use super::external::parse_host_port;
use super::resp::{Reply, RespConn};
use super::server::run_command;
use crate::error::HarnessError;

impl Cluster {
    /// Every node's URL, `redis://127.0.0.1:PORT` for local nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// assert!(cluster.urls()[0].starts_with("redis://127.0.0.1:"));
    /// ```
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        (0..self.len()).map(|i| self.url(i)).collect()
    }

    /// Every node's URL with ACL credentials:
    /// `redis://user:password@127.0.0.1:PORT` for local nodes (an external
    /// node's URL gets them in place of any it had).
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let url = format!("redis://locker:pw@127.0.0.1:{}", cluster.port(0));
    /// assert_eq!(cluster.urls_as("locker", "pw"), [url]);
    /// ```
    #[must_use]
    pub fn urls_as(&self, user: &str, password: &str) -> Vec<String> {
        self.urls()
            .into_iter()
            .map(|url| match url.split_once("://") {
                Some((scheme, rest)) => {
                    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
                    format!("{scheme}://{user}:{password}@{host}")
                }
                None => url,
            })
            .collect()
    }

    /// Node `index`'s URL.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert_eq!(cluster.url(0), format!("redis://127.0.0.1:{}", cluster.port(0)));
    /// ```
    #[must_use]
    pub fn url(&self, index: usize) -> String {
        match &self.nodes {
            Nodes::Local { nodes, .. } => format!("redis://127.0.0.1:{}", lock(nodes)[index].port),
            Nodes::External { urls } => urls[index].clone(),
        }
    }

    /// Node `index`'s port.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert!(cluster.port(0) > 0);
    /// ```
    #[must_use]
    pub fn port(&self, index: usize) -> u16 {
        match &self.nodes {
            Nodes::Local { nodes, .. } => lock(nodes)[index].port,
            Nodes::External { urls } => parse_host_port(&urls[index]).map_or(0, |(_, p)| p),
        }
    }

    /// Node `index`'s `host:port` (`127.0.0.1:PORT` for local nodes), for proxies.
    ///
    /// # Panics
    ///
    /// If `index` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// assert_eq!(cluster.host_port(0), format!("127.0.0.1:{}", cluster.port(0)));
    /// ```
    #[must_use]
    pub fn host_port(&self, index: usize) -> String {
        match &self.nodes {
            Nodes::Local { .. } => format!("127.0.0.1:{}", self.port(index)),
            Nodes::External { urls } => parse_host_port(&urls[index])
                .map_or_else(String::new, |(host, port)| format!("{host}:{port}")),
        }
    }

    /// A fresh blocking connection to node `index`, for checks and fault commands.
    ///
    /// # Errors
    ///
    /// The connect error (for example when the node is down).
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let mut conn = cluster.conn(0).unwrap();
    /// assert_eq!(conn.command(&["PING"]).unwrap().as_text().as_deref(), Some("PONG"));
    /// ```
    pub fn conn(&self, index: usize) -> Result<RespConn, HarnessError> {
        let io = |source| HarnessError::Io {
            node: index,
            action: "connect",
            source,
        };
        match &self.nodes {
            Nodes::Local { .. } => RespConn::connect(self.port(index)).map_err(io),
            Nodes::External { urls } => {
                let (host, port) = parse_host_port(&urls[index])
                    .ok_or_else(|| HarnessError::BadNodeUrl(urls[index].clone()))?;
                RespConn::connect_addr(&format!("{host}:{port}"), Duration::from_secs(2))
                    .map_err(io)
            }
        }
    }

    /// Runs one command on node `index` over a fresh connection.
    ///
    /// # Errors
    ///
    /// Connection or I/O failure, or [`HarnessError::Command`] for a server error reply.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.command(0, &["SET", "k", "1"]).unwrap();
    /// assert_eq!(cluster.command(0, &["GET", "k"]).unwrap().as_text().as_deref(), Some("1"));
    /// ```
    pub fn command(&self, index: usize, args: &[&str]) -> Result<Reply, HarnessError> {
        run_command(index, self.conn(index)?, args)
    }
}
