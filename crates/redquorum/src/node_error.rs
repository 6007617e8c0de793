//! One node's failure: the node it happened on, and fred's error said as
//! a sentence.

use std::fmt;

use crate::node_id::NodeId;

/// One node's failure, with the node it happened on and fred's error as the source.
///
/// # Examples
///
/// ```no_run
/// # fn demo(err: &redquorum::NodeError) {
/// eprintln!("{} failed: {}", err.node(), err);
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[error("node {node}: {}", Reason(source))]
pub struct NodeError {
    node: NodeId,
    #[source]
    source: fred::error::Error,
}

impl NodeError {
    pub(crate) fn new(node: NodeId, source: fred::error::Error) -> Self {
        Self { node, source }
    }

    /// The node that failed.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(err: &redquorum::NodeError) {
    /// println!("{}", err.node());
    /// # }
    /// ```
    #[must_use]
    pub fn node(&self) -> &NodeId {
        &self.node
    }

    /// What went wrong, without the node: fred's error kind and details,
    /// an OS error said by its message (as in this error's `Display`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(err: &redquorum::NodeError) {
    /// eprintln!("{}: {}", err.node(), err.reason());
    /// # }
    /// ```
    #[must_use]
    pub fn reason(&self) -> String {
        Reason(&self.source).to_string()
    }

    /// fred's error, with its kind and details.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(err: &redquorum::NodeError) {
    /// println!("{:?}", err.source_error().kind());
    /// # }
    /// ```
    #[must_use]
    pub fn source_error(&self) -> &fred::error::Error {
        &self.source
    }
}

/// fred's error as a sentence: fred keeps an OS error as its `Debug` text
/// (`Custom { kind: Uncategorized, error: "failed to lookup address ..." }`),
/// of which only the message is said.
struct Reason<'a>(&'a fred::error::Error);

impl fmt::Display for Reason<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match io_message(self.0.details()) {
            Some(message) => write!(f, "{}: {message}", self.0.kind().to_str()),
            None => fmt::Display::fmt(self.0, f),
        }
    }
}

/// The message inside an `io::Error`'s `Debug` text, if `details` is one.
fn io_message(details: &str) -> Option<&str> {
    if !(details.starts_with("Custom {") || details.starts_with("Os {")) {
        return None;
    }
    let start = details
        .find("error: \"")
        .map(|i| i + "error: \"".len())
        .or_else(|| details.find("message: \"").map(|i| i + "message: \"".len()))?;
    let rest = &details[start..];
    rest.find('"').map(|end| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use fred::error::{Error as FredError, ErrorKind};

    #[test]
    fn an_os_error_is_said_by_its_message_not_its_debug_struct() {
        let node = NodeId::new("no-such-host", 6379);
        let lookup = FredError::new(
            ErrorKind::IO,
            r#"Custom { kind: Uncategorized, error: "failed to lookup address information: Name or service not known" }"#,
        );
        assert_eq!(
            NodeError::new(node.clone(), lookup).to_string(),
            "node no-such-host:6379: IO Error: failed to lookup address information: Name or service not known"
        );
        let refused = FredError::new(
            ErrorKind::IO,
            r#"Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }"#,
        );
        assert_eq!(
            NodeError::new(node.clone(), refused).to_string(),
            "node no-such-host:6379: IO Error: Connection refused"
        );
        let plain = FredError::new(ErrorKind::IO, "cannot connect: connection refused");
        assert_eq!(
            NodeError::new(node, plain).to_string(),
            "node no-such-host:6379: IO Error: cannot connect: connection refused"
        );
    }
}
