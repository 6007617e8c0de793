//! Bad configuration at build time ([`BuildError`]): what the builder
//! refuses, before anything is connected.

use std::time::Duration;

use crate::error::human;
use crate::node_id::NodeId;

/// A configuration the builder refuses; nothing was connected.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use redquorum::{BuildError, Redlock};
///
/// let err = Redlock::builder()
///     .nodes(["redis://127.0.0.1:7001", "redis://127.0.0.1:7002"])
///     .build()
///     .unwrap_err();
/// assert!(matches!(err, BuildError::EvenNodeCount(2)));
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No node URL was given.
    #[error(
        "no nodes configured: Redlock needs an odd number (3 or more recommended) of independent masters"
    )]
    NoNodes,
    /// An even node count wastes a node and invites split decisions.
    #[error("even node count {0}: use an odd number of independent masters")]
    EvenNodeCount(usize),
    /// The same node was named twice, which would let one master vote twice.
    #[error("duplicate node {0}: every node must be a distinct master")]
    DuplicateNode(NodeId),
    /// A node URL could not be parsed (the URL shown has its password removed).
    #[error("invalid node url {url}: {}", words(source.details()))]
    InvalidUrl {
        /// The URL with any password replaced by `***`.
        url: String,
        /// Why fred refused it.
        #[source]
        source: fred::error::Error,
    },
    /// A node URL that parses but does not name one master exactly: no
    /// port, port 0, an unknown query parameter or a bad `?node=` seed, a
    /// path that is not a single server's database, a fragment (the URL
    /// shown has its password removed).
    #[error("invalid node url {url}: {problem}")]
    MalformedUrl {
        /// The URL with any password replaced by `***`.
        url: String,
        /// What is wrong with it.
        problem: crate::error::UrlProblem,
    },
    /// A fred `Config` given with
    /// [`RedlockBuilder::node_config`](crate::RedlockBuilder::node_config)
    /// that cannot be one Redlock node.
    #[error("invalid node config: {reason}")]
    InvalidNodeConfig {
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A setting read from the environment or a [`RedlockConfig`](crate::RedlockConfig)
    /// has a value the builder cannot use, or a required one is missing.
    #[error("{setting}: {reason}")]
    InvalidSetting {
        /// The environment variable (`REDQUORUM_TTL`) or field (`ttl`).
        setting: String,
        /// What is wrong, never with a password in it.
        reason: String,
    },
    /// A TLS root certificate file named in the configuration could not be read.
    #[error("cannot read the TLS root certificate {path}")]
    TlsRootCertificateFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// A `rediss://` URL was given but the crate was built without the `tls` feature.
    #[error("node {0} asks for TLS (rediss://) but redquorum was built without its `tls` feature")]
    TlsNotEnabled(NodeId),
    /// A zero TTL would expire the lock before it is granted.
    #[error("ttl must be greater than zero")]
    ZeroTtl,
    /// A TTL longer than the longest supported (a year): beyond it clock
    /// arithmetic and Redis's expiry range overflow, and it is a mistake.
    #[error("ttl {} is longer than the longest supported, {}", human(*ttl), human(*max))]
    TtlOutOfRange {
        /// The configured TTL.
        ttl: Duration,
        /// The longest supported.
        max: Duration,
    },
    /// A `wait` (or retry pause) longer than the longest supported (a year).
    #[error("wait {} is longer than the longest supported, {}", human(*wait), human(*max))]
    WaitOutOfRange {
        /// The configured wait, retry delay or retry jitter.
        wait: Duration,
        /// The longest supported.
        max: Duration,
    },
    /// A key prefix with `{` or `}`, which would make the key layout
    /// ambiguous (resource names sit in braces after it).
    #[error("key prefix {0:?} must not contain braces")]
    InvalidKeyPrefix(String),
    /// The per-node timeout must be smaller than the TTL, or every lease could expire in flight.
    #[error("node timeout {} must be smaller than the ttl {}", human(*node_timeout), human(*ttl))]
    NodeTimeoutNotBelowTtl {
        /// The configured per-node timeout.
        node_timeout: Duration,
        /// The configured TTL.
        ttl: Duration,
    },
    /// A zero per-node timeout would fail every call.
    #[error("node timeout must be greater than zero")]
    ZeroNodeTimeout,
    /// The drift factor must be in `[0, 0.5)`; the default is 0.01.
    #[error("drift factor {0} out of range: it must be at least 0 and below 0.5")]
    DriftFactorOutOfRange(f64),
    /// The watchdog's `extend_before` must be above zero and below the TTL.
    #[error(
        "watchdog extend_before {extend_before:?} must be above zero and below the ttl {ttl:?}"
    )]
    ExtendBeforeOutOfRange {
        /// The configured `WatchdogOptions::extend_before`.
        extend_before: Duration,
        /// The configured TTL.
        ttl: Duration,
    },
    /// The watchdog's `stop_margin` must be above zero and below `extend_before`.
    #[error(
        "watchdog stop_margin {stop_margin:?} must be above zero and below extend_before {extend_before:?}"
    )]
    StopMarginOutOfRange {
        /// The configured `WatchdogOptions::stop_margin`.
        stop_margin: Duration,
        /// When the watchdog extends (`WatchdogOptions::extend_before`, or its default).
        extend_before: Duration,
    },
    /// A custom TLS root certificate is neither a PEM certificate nor a valid DER one.
    #[error("invalid TLS root certificate")]
    InvalidTlsRootCertificate {
        /// Why it was refused (a PEM or certificate parse error).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// TLS root certificates were given but no node URL is `rediss://`:
    /// every connection would be plain text, which is almost certainly not
    /// what was meant (the URLs are missing their `rediss://`).
    #[error(
        "TLS root certificates were given but no node uses rediss://: the connections would be plain text"
    )]
    TlsRootsWithoutTls,
    /// The max TTL of the delayed-restart rule is below the lock TTL, so a
    /// restarted node could rejoin while one of our leases may still live.
    #[error("max ttl {} must be at least the ttl {}", human(*max_ttl), human(*ttl))]
    MaxTtlBelowTtl {
        /// The configured max TTL.
        max_ttl: Duration,
        /// The configured TTL.
        ttl: Duration,
    },
    /// A zero health check interval would probe the nodes without pause.
    #[error("health check interval must be greater than zero")]
    ZeroHealthCheckInterval,
    /// Connecting needs a Tokio runtime; `build()` was called outside one.
    #[error("no Tokio runtime: call build() from within a Tokio runtime")]
    NoRuntime,
}

/// fred passes a URL parser's error on as its variant name (`InvalidPort`):
/// said as words (`invalid port`); any other text is kept as it is.
fn words(details: &str) -> String {
    if details.is_empty() || !details.chars().all(|c| c.is_ascii_alphabetic()) {
        return details.to_owned();
    }
    let mut out = String::new();
    for c in details.chars() {
        if c.is_ascii_uppercase() && !out.is_empty() {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_url_says_what_is_wrong_with_it() {
        let error = crate::redlock::Redlock::builder()
            .nodes(["redis://u:s3cret@h:port"])
            .build()
            .unwrap_err();
        let text = error.to_string();
        assert_eq!(text, "invalid node url redis://u:***@h:port: invalid port");
        assert_eq!(words("a node URL must be"), "a node URL must be");
        assert_eq!(words("EmptyHost"), "empty host");
    }
}
