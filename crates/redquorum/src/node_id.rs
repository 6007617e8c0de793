//! A node's identity, `host:port`: safe to log, never carries credentials.

use std::fmt;

/// A node's identity: `host:port`. Never carries credentials, so it is safe to log.
///
/// # Examples
///
/// ```no_run
/// # fn demo(err: &redquorum::NodeError) {
/// let node: &redquorum::NodeId = err.node();
/// println!("{node}"); // e.g. 127.0.0.1:7001
/// # }
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    host: String,
    port: u16,
}

impl NodeId {
    /// The id of the node at `host` (normalised: lower case, no trailing dot) and `port`.
    pub(crate) fn new(host: &str, port: u16) -> Self {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        Self { host, port }
    }
}

impl NodeId {
    /// The host name or address.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(node: &redquorum::NodeId) {
    /// println!("{}", node.host());
    /// # }
    /// ```
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The TCP port.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(node: &redquorum::NodeId) {
    /// println!("{}", node.port());
    /// # }
    /// ```
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({self})")
    }
}
