//! What is wrong with a node URL that parses but does not name one master
//! exactly ([`UrlProblem`], in [`BuildError::MalformedUrl`](crate::BuildError::MalformedUrl)).

/// Why a node URL that parses is refused: fred, which reads node URLs,
/// would assume a port, take port 0, or silently ignore a part the caller
/// wrote, and the lock would go to a node other than the one named (or a
/// quorum would be made without it).
///
/// Never holds a password: a URL whose user name or password was cut by an
/// unencoded `/`, `?` or `#` is refused as [`UrlProblem::UnencodedUserinfo`]
/// before any part after the host is named.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use redquorum::{BuildError, Redlock, UrlProblem};
///
/// let err = Redlock::builder()
///     .nodes(["redis-cluster://10.0.0.1", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"])
///     .build()
///     .unwrap_err();
/// assert!(matches!(err, BuildError::MalformedUrl { problem: UrlProblem::NoPort, .. }));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlProblem {
    /// No port: fred would assume 6379, which may be another server.
    #[error("no port: give host:port (no port is assumed)")]
    NoPort,
    /// Port 0, on which no server listens.
    #[error("port 0: give the port the server listens on")]
    PortZero,
    /// A query parameter other than a cluster URL's `node`; fred would ignore it.
    #[error(
        "unknown query parameter {0:?}: a cluster URL takes only ?node=host:port, a redis:// URL none"
    )]
    UnknownParameter(String),
    /// A cluster URL's `?node=` seed that is not `host:port` with a port above 0.
    #[error("seed {0:?} in ?node= is not host:port with a port from 1 to 65535")]
    BadSeed(String),
    /// A single server's path that is not a database number.
    #[error("path {0:?}: a redis:// URL's only path is a database number, such as /0")]
    Path(String),
    /// A path on a cluster URL; fred would ignore it (a Redis Cluster has
    /// only database 0).
    #[error("path {0:?}: a cluster URL takes no path (a Redis Cluster has only database 0)")]
    ClusterPath(String),
    /// A `#fragment`; fred would ignore it.
    #[error("a #fragment: a node URL takes none (write a '#' in a password as %23)")]
    Fragment,
    /// An `@` after the host: a `/`, `?` or `#` in the user name or password
    /// ended the host early, so the rest of the password would be read as a
    /// path, a query or a fragment.
    #[error(
        "an '@' after the host: write a '/', '?' or '#' in the user name or password as %2F, %3F or %23"
    )]
    UnencodedUserinfo,
}
