//! The builder's methods that add masters ([`RedlockBuilder::node`],
//! [`node_config`](RedlockBuilder::node_config),
//! [`nodes`](RedlockBuilder::nodes)), each kept as a `NodeSource`.

use crate::setup::builder::RedlockBuilder;
use crate::setup::node_source::NodeSource;

impl RedlockBuilder {
    /// Adds one master: `redis://[user:password@]host:port` or `rediss://...`
    /// (TLS); or a Redis Cluster voting as one master,
    /// `redis-cluster://[user:password@]host:port[?node=host:port...]` or
    /// `rediss-cluster://...` (docs/locks.md, "Cluster masters").
    ///
    /// A URL must name its node exactly, or `build()` refuses it with
    /// [`BuildError::MalformedUrl`](crate::BuildError::MalformedUrl): the
    /// port is required (none is assumed), port 0, a query parameter other
    /// than a cluster URL's `node`, a path other than a single server's
    /// database (`/0`) and a `#fragment` are refused ([`UrlProblem`](crate::UrlProblem)).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder()
    ///     .node("redis://127.0.0.1:7001")
    ///     .node("redis://locker:s3cret@127.0.0.1:7002")
    ///     .node("redis://127.0.0.1:7003");
    /// assert!(!format!("{builder:?}").contains("s3cret"));
    /// ```
    pub fn node(mut self, url: impl Into<String>) -> Self {
        self.nodes.push(NodeSource::Url(url.into()));
        self
    }

    /// Adds one master from a fred [`Config`](fred::prelude::Config) you
    /// already have (credentials from a secret store, a TLS connector of
    /// your own, a database number, RESP3).
    ///
    /// The config's server (one master, `ServerConfig::Centralized`, or a
    /// cluster master, `ServerConfig::Clustered`), `username`, `password`, `database`,
    /// `version` and `tls` are used. Everything else is replaced by
    /// redquorum's lock-safe settings, because fred's defaults are unsafe for
    /// locks (`docs/operations.md`): each command times out after
    /// [`node_timeout`](Self::node_timeout), is sent at most once (never
    /// re-sent after a reconnect), and the client reconnects forever;
    /// `fail_fast` is turned off. That is why this takes a `Config` and not a
    /// connected `fred::clients::Client`: a client's settings cannot be
    /// changed once it is built. A sentinel config is refused at
    /// `build()` ([`BuildError::InvalidNodeConfig`](crate::BuildError::InvalidNodeConfig)).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use redquorum::fred::prelude::{Config, ServerConfig};
    ///
    /// let mut builder = redquorum::Redlock::builder();
    /// for port in (0..cluster.len()).map(|i| cluster.port(i)) {
    ///     let config = Config {
    ///         server: ServerConfig::new_centralized("127.0.0.1", port),
    ///         // username: Some("locker".into()), password: Some(secret), ...
    ///         ..Default::default()
    ///     };
    ///     builder = builder.node_config(config);
    /// }
    /// let redlock = builder.build()?;
    /// redlock.lock("from-configs").await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn node_config(mut self, config: fred::prelude::Config) -> Self {
        self.nodes.push(NodeSource::Config(Box::new(config)));
        self
    }

    /// Adds several masters; see [`node`](Self::node).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder()
    ///     .nodes(["redis://127.0.0.1:7001", "redis://127.0.0.1:7002", "redis://127.0.0.1:7003"]);
    /// ```
    pub fn nodes<I, S>(mut self, urls: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.nodes.extend(
            urls.into_iter()
                .map(|u| NodeSource::Url(u.as_ref().to_owned())),
        );
        self
    }
}
