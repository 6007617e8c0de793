//! The masters of a [`RedlockBuilder`] as the caller named them: a
//! `redis://` URL, or a fred [`Config`](fred::prelude::Config) the caller
//! already has; both become one lock-safe client per node at `build()`.

use crate::builder::RedlockBuilder;
use crate::connection;
use crate::error::BuildError;
use crate::node_id::NodeId;

/// One master as the caller named it.
#[derive(Clone)]
pub(crate) enum NodeSource {
    /// `redis://...` or `rediss://...`.
    Url(String),
    /// A fred config the caller built (boxed: it is large).
    Config(Box<fred::prelude::Config>),
}

impl NodeSource {
    /// For `Debug`: the URL with its password replaced, or the config's node.
    pub(crate) fn describe(&self) -> String {
        match self {
            NodeSource::Url(url) => connection::redact_url(url),
            NodeSource::Config(config) => match connection::from_config((**config).clone()) {
                Ok((_, id)) => format!("config {id}"),
                Err(_) => "config (not a single master)".to_owned(),
            },
        }
    }

    /// fred's config, the node's identity, and whether it uses TLS.
    pub(crate) fn parse(&self) -> Result<(fred::prelude::Config, NodeId, bool), BuildError> {
        let (config, id) = match self {
            NodeSource::Url(url) => connection::parse_url(url)?,
            NodeSource::Config(config) => connection::from_config((**config).clone())?,
        };
        let tls = connection::is_tls(&config);
        Ok((config, id, tls))
    }
}

impl RedlockBuilder {
    /// Adds one master: `redis://[user:password@]host:port` or `rediss://...` (TLS).
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
    /// The config's server (which must be one master,
    /// `ServerConfig::Centralized`), `username`, `password`, `database`,
    /// `version` and `tls` are used. Everything else is replaced by
    /// redquorum's lock-safe settings, because fred's defaults are unsafe for
    /// locks (`docs/operations.md`): each command times out after
    /// [`node_timeout`](Self::node_timeout), is sent at most once (never
    /// re-sent after a reconnect), and the client reconnects forever;
    /// `fail_fast` is turned off. That is why this takes a `Config` and not a
    /// connected `fred::clients::Client`: a client's settings cannot be
    /// changed once it is built. A cluster or sentinel config is refused at
    /// `build()` ([`BuildError::InvalidNodeConfig`]).
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
