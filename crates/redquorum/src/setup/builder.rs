//! `RedlockBuilder`: collects the configuration and validates all of it at `build()`.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::BuildError;
use crate::node::cluster::ClusterMaster;
use crate::node::connection;
use crate::node::master::Node;
use crate::node::nodes::Nodes;
use crate::node::script;
use crate::node::server::{Server, ServerSettings};
use crate::options::LockOptions;
use crate::quorum::coordinator::Quorum;
use crate::quorum::tally;
use crate::redlock::Redlock;
use crate::setup::node_source::NodeSource;
use crate::wait::notify::Notifier;

impl Redlock {
    /// Starts a [`RedlockBuilder`].
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder();
    /// ```
    pub fn builder() -> RedlockBuilder {
        RedlockBuilder::default()
    }
}

/// Builds a [`Redlock`]; every bad input becomes a [`BuildError`], never a panic.
///
/// `Debug` shows node URLs with their passwords replaced by `***`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// # let urls = cluster.urls();
/// use std::time::Duration;
/// use redquorum::Redlock;
///
/// let redlock = Redlock::builder()
///     .nodes(&urls) // e.g. ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", ...]
///     .ttl(Duration::from_secs(5))
///     .node_timeout(Duration::from_millis(50))
///     .key_prefix("myapp:lock:")
///     .build()?;
/// assert_eq!(redlock.quorum(), 2);
/// # Ok(()) }
/// ```
#[must_use]
#[derive(Clone)]
pub struct RedlockBuilder {
    /// The masters, as named (setup/node_source.rs).
    pub(crate) nodes: Vec<NodeSource>,
    options: LockOptions,
    node_timeout: Duration,
    drift_factor: f64,
    key_prefix: String,
    /// Custom trust roots for `rediss://` nodes (certificates are public: no redaction needed).
    tls_roots: Vec<Vec<u8>>,
    /// Enables the delayed-restart rule (see health/node_health.rs).
    max_ttl: Option<Duration>,
    health_check_interval: Duration,
    check_node_clocks: bool,
}

impl Default for RedlockBuilder {
    fn default() -> Self {
        Self {
            nodes: Vec::new(),
            options: LockOptions::default(),
            node_timeout: Duration::from_millis(100),
            drift_factor: 0.01,
            key_prefix: "lock:".to_owned(),
            tls_roots: Vec::new(),
            max_ttl: None,
            health_check_interval: crate::health::eligibility::DEFAULT_INTERVAL,
            check_node_clocks: true,
        }
    }
}

impl fmt::Debug for RedlockBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nodes: Vec<String> = self.nodes.iter().map(NodeSource::describe).collect();
        f.debug_struct("RedlockBuilder")
            .field("nodes", &nodes)
            .field("options", &self.options)
            .field("node_timeout", &self.node_timeout)
            .field("drift_factor", &self.drift_factor)
            .field("key_prefix", &self.key_prefix)
            .field("tls_roots", &self.tls_roots.len())
            .field("max_ttl", &self.max_ttl)
            .field("health_check_interval", &self.health_check_interval)
            .finish()
    }
}

impl RedlockBuilder {
    /// The lease each node grants. Default: 10 s. Must be above the node timeout.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder().ttl(std::time::Duration::from_secs(30));
    /// ```
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.options.ttl = ttl;
        self
    }

    /// How long `lock()` retries before giving up. Default: 10 s.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder().wait(std::time::Duration::from_secs(1));
    /// ```
    pub fn wait(mut self, wait: Duration) -> Self {
        self.options.wait = wait;
        self
    }

    /// The fixed pause between `lock()` attempts. Default: 50 ms.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder().retry_delay(std::time::Duration::from_millis(20));
    /// ```
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.options.retry_delay = delay;
        self
    }

    /// The random extra pause between attempts, in `[0, jitter)`. Default: 100 ms.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder().retry_jitter(std::time::Duration::from_millis(30));
    /// ```
    pub fn retry_jitter(mut self, jitter: Duration) -> Self {
        self.options.retry_jitter = jitter;
        self
    }

    /// All lock options at once.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder().lock_options(redquorum::LockOptions::default());
    /// ```
    pub fn lock_options(mut self, options: LockOptions) -> Self {
        self.options = options;
        self
    }

    /// How long one node may take to answer one call. Default: 100 ms.
    /// Keep it far below the TTL: a slow node then costs little validity.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder().node_timeout(std::time::Duration::from_millis(50));
    /// ```
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.node_timeout = timeout;
        self
    }

    /// The assumed worst relative clock drift, in `[0, 0.5)`. Default: 0.01.
    /// The validity of a lease is cut by `ttl * drift_factor + 2 ms`.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder().drift_factor(0.02);
    /// ```
    pub fn drift_factor(mut self, drift_factor: f64) -> Self {
        self.drift_factor = drift_factor;
        self
    }

    /// Prepended to every key: a resource's lock key is the prefix, then its
    /// name in braces (see [`Redlock::key`]). Default: `lock:`. It must not
    /// contain braces ([`BuildError::InvalidKeyPrefix`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder().key_prefix("billing:lock:");
    /// ```
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// Trusts this CA certificate (PEM, one or more certificates, or DER) for
    /// `rediss://` nodes, instead of the system's roots. Call it again to add
    /// more. Default: the system's roots. Needs the `tls` feature (on by
    /// default); with no `rediss://` node, `build()` refuses it
    /// ([`BuildError::TlsRootsWithoutTls`]).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::TlsCluster::start(3)?;
    /// # let ca_pem = cluster.ca_pem().to_owned();
    /// // ca_pem = std::fs::read("/etc/redis/tls/ca.pem")?;
    /// let redlock = redquorum::Redlock::builder()
    ///     .nodes(cluster.urls()) // "rediss://10.0.0.1:6380", ...
    ///     .tls_root_certificate(ca_pem)
    ///     .build()?;
    /// redlock.lock("over-tls").await?.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn tls_root_certificate(mut self, certificate: impl AsRef<[u8]>) -> Self {
        self.tls_roots.push(certificate.as_ref().to_vec());
        self
    }

    /// The largest TTL any lock on these nodes uses, which turns on the
    /// delayed-restart rule: a node that does not fsync every write
    /// (`appendfsync always`) and has been up for less than `max_ttl` does not
    /// count toward a quorum, because it may have lost keys in a crash.
    /// Must be at least the TTL, and cover every [`LockOptions::ttl`] used
    /// with [`Redlock::with_options`](crate::Redlock::with_options); with a
    /// [`LockOptions::lock_delay`], cover the TTL plus the delay (a node
    /// that lost a hold must not vote while that hold's delay would still
    /// block the resource).
    /// Default: off (fresh non-durable nodes vote at once; restart crashed
    /// nodes only after the max TTL yourself, see `docs/operations.md`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let builder = redquorum::Redlock::builder()
    ///     .ttl(Duration::from_secs(10))
    ///     .max_ttl(Duration::from_secs(60));
    /// ```
    pub fn max_ttl(mut self, max_ttl: Duration) -> Self {
        self.max_ttl = Some(max_ttl);
        self
    }

    /// How often each node is probed (role, eviction policy, persistence,
    /// uptime) besides after every reconnection. Default: 5 s.
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder()
    ///     .health_check_interval(std::time::Duration::from_secs(1));
    /// ```
    pub fn health_check_interval(mut self, interval: Duration) -> Self {
        self.health_check_interval = interval;
        self
    }

    /// Whether each probe checks the node's clock against the local one and
    /// refuses the votes of a node whose clock jumped, stopped or ran off
    /// by more than the drift factor, until it has been stable for the
    /// longest lease (`max_ttl`, else the TTL). Default: on. Turn it off only
    /// to study what such a clock does (the torture tests do).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum::Redlock::builder().check_node_clocks(false);
    /// ```
    pub fn check_node_clocks(mut self, on: bool) -> Self {
        self.check_node_clocks = on;
        self
    }

    /// The lock options set so far (read by `setup/config.rs`).
    pub(crate) fn options(&self) -> &LockOptions {
        &self.options
    }

    /// Validates the configuration and starts connecting to every node.
    ///
    /// It does not wait for connections: a node that is down now is retried
    /// in the background and counts as failed until it answers, so a
    /// majority is enough to start.
    ///
    /// # Errors
    ///
    /// A [`BuildError`] naming the first problem: no nodes, an even count,
    /// a zero TTL or node timeout, a node timeout not below the TTL, a drift
    /// factor outside `[0, 0.5)`, a malformed URL, TLS without the `tls`
    /// feature, a duplicate node, or no Tokio runtime to connect from.
    ///
    /// # Panics
    ///
    /// Never.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use redquorum::{BuildError, Redlock};
    ///
    /// let err = Redlock::builder().node("redis://127.0.0.1:7001").node("redis://127.0.0.1:7001")
    ///     .node("redis://127.0.0.1:7002").build().unwrap_err();
    /// assert!(matches!(err, BuildError::DuplicateNode(_)));
    /// # }
    /// ```
    pub fn build(self) -> Result<Redlock, BuildError> {
        match self.nodes.len() {
            0 => return Err(BuildError::NoNodes),
            n if n % 2 == 0 => return Err(BuildError::EvenNodeCount(n)),
            _ => {}
        }
        if self.node_timeout.is_zero() {
            return Err(BuildError::ZeroNodeTimeout);
        }
        self.options.validate(self.node_timeout)?;
        if !(0.0..0.5).contains(&self.drift_factor) {
            return Err(BuildError::DriftFactorOutOfRange(self.drift_factor));
        }
        if let Some(max_ttl) = self.max_ttl.filter(|m| *m < self.options.ttl) {
            return Err(BuildError::MaxTtlBelowTtl {
                max_ttl,
                ttl: self.options.ttl,
            });
        }
        if self.health_check_interval.is_zero() {
            return Err(BuildError::ZeroHealthCheckInterval);
        }
        let is_rediss = |node: &NodeSource| match node {
            NodeSource::Url(url) => url.starts_with("rediss://"),
            NodeSource::Config(config) => connection::is_tls(config),
        };
        if !self.tls_roots.is_empty() && !self.nodes.iter().any(is_rediss) {
            return Err(BuildError::TlsRootsWithoutTls);
        }
        if !crate::protocol::keys::is_valid_prefix(&self.key_prefix) {
            return Err(BuildError::InvalidKeyPrefix(self.key_prefix));
        }
        let mut seen = HashSet::new();
        let mut parsed = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            let (mut config, id, _) = node.parse()?;
            crate::setup::tls::apply_roots(&mut config, &self.tls_roots)?;
            if !seen.insert(id.clone()) {
                return Err(BuildError::DuplicateNode(id));
            }
            parsed.push((config, id));
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(BuildError::NoRuntime);
        }
        crate::metrics::describe();
        let subscribers = parsed
            .iter()
            .map(|(config, _)| connection::subscriber(config.clone(), self.node_timeout))
            .collect();
        let connect_timeout = connection::connect_timeout(self.node_timeout);
        let notifier = Notifier::new(subscribers, tally::quorum, connect_timeout);
        let settings = ServerSettings {
            node_timeout: self.node_timeout,
            max_ttl: self.max_ttl,
            interval: self.health_check_interval,
            // A node whose clock misbehaved (or a cluster shard's new
            // primary) votes again once every lease it may have granted
            // meanwhile has ended.
            clock_rule: (self.drift_factor, self.max_ttl.unwrap_or(self.options.ttl)),
            check_clock: self.check_node_clocks,
        };
        let nodes = parsed
            .into_iter()
            .map(|(config, id)| match connection::cluster_seeds(&config) {
                Some(seeds) => {
                    Node::Cluster(Arc::new(ClusterMaster::new(id, seeds, config, settings)))
                }
                None => Node::single(Server::new(config, id, &settings, &script::OPS)),
            })
            .collect();
        let nodes = Nodes::start(nodes, tally::quorum, connect_timeout, self.node_timeout);
        let quorum = Quorum::new(nodes, self.drift_factor, Arc::new(notifier));
        Ok(Redlock::new(
            Arc::new(quorum),
            self.key_prefix.into(),
            self.node_timeout,
            self.options,
        ))
    }
}
