//! Connecting to one master: node URLs, and the fred clients with settings
//! that are safe for locks.
//!
//! fred's defaults are risky for a lock (docs/operations.md): no command
//! timeout, commands re-sent after a reconnect, 10 s connect timeouts. Every
//! client redquorum makes goes through [`settings`].

use std::time::Duration;

use fred::clients::{Client, SubscriberClient};
use fred::interfaces::{ClientLike, EventInterface};
use fred::prelude::{Config, ConnectionConfig, PerformanceConfig, ReconnectPolicy, ServerConfig};

use crate::error::BuildError;
use crate::node_id::NodeId;

/// Replaces the password in a URL with `***`, for error messages.
pub(crate) fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return if url.contains('@') {
            "***".into()
        } else {
            url.into()
        };
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
            // `redis://password@host` puts a bare password in the user position
            None => format!("{scheme}://***@{host}"),
        },
        None => url.into(),
    }
}

/// Parses a node URL into fred's config and the node's identity:
/// `redis://` or `rediss://` for one server, `redis-cluster://` or
/// `rediss-cluster://` (more seeds as `?node=host:port`) for a Redis
/// Cluster voting as one master, named by its first seed.
pub(crate) fn parse_url(url: &str) -> Result<(Config, NodeId), BuildError> {
    let invalid = |source| BuildError::InvalidUrl {
        url: redact_url(url),
        source,
    };
    // fred would take any scheme (http://...) as a plain connection.
    let scheme = url.split_once("://").map(|(scheme, _)| scheme);
    if !matches!(
        scheme,
        Some("redis" | "rediss" | "redis-cluster" | "rediss-cluster")
    ) {
        return Err(invalid(fred::error::Error::new(
            fred::error::ErrorKind::Config,
            "a node URL must start with redis://, rediss://, redis-cluster:// or rediss-cluster://",
        )));
    }
    // What fred would take or ignore silently (no port, port 0, an
    // unknown parameter, a path, a fragment); a URL that does not parse at
    // all is fred's to name, below.
    if let Ok(parsed) = url::Url::parse(url) {
        super::url_check::check(url, &parsed).map_err(|problem| BuildError::MalformedUrl {
            url: redact_url(url),
            problem,
        })?;
    }
    let mut config = Config::from_url(url).map_err(invalid)?;
    // fred lists the `?node=` seeds first and the URL's host last: the
    // URL's host is the one that names the node.
    if let ServerConfig::Clustered { hosts, .. } = &mut config.server {
        hosts.rotate_right(1);
    }
    let id = node_id(&config).ok_or_else(|| {
        invalid(fred::error::Error::new(
            fred::error::ErrorKind::Config,
            "a node must be a single master or a cluster, not a sentinel URL",
        ))
    })?;
    // Without a TLS feature fred would connect a rediss:// URL in plain text.
    if url.starts_with("rediss") && !cfg!(feature = "tls") {
        return Err(BuildError::TlsNotEnabled(id));
    }
    Ok((config, id))
}

/// The node's identity: its server, or a cluster's first seed.
fn node_id(config: &Config) -> Option<NodeId> {
    match &config.server {
        ServerConfig::Centralized { server } => Some(NodeId::new(&server.host, server.port)),
        ServerConfig::Clustered { hosts, .. } => hosts
            .first()
            .map(|server| NodeId::new(&server.host, server.port)),
        _ => None,
    }
}

/// A cluster config's seeds (`None` for a single server).
pub(crate) fn cluster_seeds(config: &Config) -> Option<Vec<(String, u16)>> {
    match &config.server {
        ServerConfig::Clustered { hosts, .. } => Some(
            hosts
                .iter()
                .map(|server| (server.host.to_string(), server.port))
                .collect(),
        ),
        _ => None,
    }
}

/// Checks a fred [`Config`] given with `RedlockBuilder::node_config` and
/// names its node (a centralized config: one server; a clustered one: a
/// cluster master). Only its server, credentials, database, RESP version and
/// TLS settings are kept: everything else starts from fred's defaults, and
/// the lock-safe settings ([`settings`]) are applied over them, whatever the
/// caller set.
pub(crate) fn from_config(config: Config) -> Result<(Config, NodeId), BuildError> {
    let id = node_id(&config).ok_or(BuildError::InvalidNodeConfig {
        reason: "a node must be a single master (ServerConfig::Centralized) or a cluster (ServerConfig::Clustered), not a sentinel config",
    })?;
    #[cfg_attr(not(feature = "tls"), allow(unused_mut))]
    let mut kept = Config {
        server: config.server,
        username: config.username,
        password: config.password,
        database: config.database,
        version: config.version,
        ..Config::default()
    };
    #[cfg(feature = "tls")]
    {
        kept.tls = config.tls;
    }
    Ok((kept, id))
}

/// Whether connections to this node use TLS.
pub(crate) fn is_tls(config: &Config) -> bool {
    #[cfg(feature = "tls")]
    return config.tls.is_some();
    #[cfg(not(feature = "tls"))]
    {
        let _ = config;
        false
    }
}

/// A command client for one node, not yet connected.
pub(crate) fn client(config: Config, node_timeout: Duration) -> Client {
    let (config, performance, connection, reconnect) = settings(config, node_timeout);
    Client::new(config, Some(performance), Some(connection), Some(reconnect))
}

/// The node's subscriber client for release notifications (`wait/notify.rs`),
/// not yet connected. Its message buffer is larger than fred's 32 so a
/// burst of releases is not dropped as `Lagged` (which only costs a
/// spurious retry, but still costs).
pub(crate) fn subscriber(config: Config, node_timeout: Duration) -> SubscriberClient {
    let (config, performance, connection, reconnect) = settings(config, node_timeout);
    let performance = PerformanceConfig {
        broadcast_channel_capacity: 1024,
        ..performance
    };
    // A cluster master's subscriber follows its channels' slots (a
    // subscription is not a lock operation: redirections are harmless).
    let connection = ConnectionConfig {
        max_redirections: if config.server.is_clustered() { 5 } else { 0 },
        ..connection
    };
    SubscriberClient::new(config, Some(performance), Some(connection), Some(reconnect))
}

/// The lock-safe fred settings of every client, each chosen because fred's
/// default is risky for locks:
/// - every command times out after `node_timeout` (fred's default: never),
///   but a lock call that must run, whose caller alone stops waiting then
///   (node/batch/batcher_call.rs);
/// - a command is sent at most once, never re-sent after a reconnect, so a
///   stale acquire cannot land after we gave up on it;
/// - reconnect forever with backoff, so a node that was down at start-up
///   or restarted rejoins (`fail_fast` would end the client for good if the
///   first connect failed).
fn settings(
    mut config: Config,
    node_timeout: Duration,
) -> (Config, PerformanceConfig, ConnectionConfig, ReconnectPolicy) {
    config.fail_fast = false;
    let connect_timeout = connect_timeout(node_timeout);
    let performance = PerformanceConfig {
        default_command_timeout: node_timeout,
        ..Default::default()
    };
    let connection = ConnectionConfig {
        connection_timeout: connect_timeout,
        internal_command_timeout: connect_timeout,
        max_command_attempts: 1,
        max_redirections: 0,
        auto_client_setname: false,
        ..Default::default()
    };
    let reconnect = ReconnectPolicy::new_exponential(0, 20, 1_000, 2);
    (config, performance, connection, reconnect)
}

/// How long connecting (and the handshake) may take.
pub(crate) fn connect_timeout(node_timeout: Duration) -> Duration {
    (node_timeout * 10).clamp(Duration::from_millis(500), Duration::from_secs(5))
}

/// Resolves when the client's current connection attempt succeeds or
/// fails; returns whether it succeeded. A refused connection is reported on
/// the error channel, not to `wait_for_connect` (fred keeps retrying), so
/// both are watched: a node that is down answers "no" at once instead of
/// holding the first call for the whole connect timeout.
pub(crate) async fn wait_connected(client: &Client) -> bool {
    let mut errors = client.error_rx();
    tokio::select! {
        connected = client.wait_for_connect() => connected.is_ok(),
        _ = errors.recv() => client.is_connected(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_url_hides_passwords() {
        assert_eq!(redact_url("redis://u:secret@h:1"), "redis://u:***@h:1");
        assert_eq!(redact_url("redis://secret@h:1"), "redis://***@h:1");
        assert_eq!(redact_url("redis://:secret@h:1/0"), "redis://:***@h:1/0");
        assert_eq!(redact_url("redis://h:1"), "redis://h:1");
        assert_eq!(redact_url("garbage@x"), "***");
    }

    #[test]
    fn parse_url_names_the_node_by_normalised_host_and_port() {
        let (_, id) = parse_url("redis://user:pw@127.0.0.1:7001").unwrap();
        assert_eq!(id.to_string(), "127.0.0.1:7001");
        assert_eq!(format!("{id:?}"), "NodeId(127.0.0.1:7001)");
        let (_, upper) = parse_url("redis://LocalHost.:7001").unwrap();
        assert_eq!(upper.to_string(), "localhost:7001");
    }

    #[test]
    fn parse_url_refuses_cluster_urls_and_garbage() {
        assert!(matches!(
            parse_url("not a url"),
            Err(BuildError::InvalidUrl { .. })
        ));
        assert!(matches!(
            parse_url("redis-sentinel://127.0.0.1:7001"),
            Err(BuildError::InvalidUrl { .. })
        ));
        assert!(matches!(
            parse_url("http://127.0.0.1:7001"),
            Err(BuildError::InvalidUrl { .. })
        ));
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn rediss_without_the_tls_feature_is_refused() {
        let err = parse_url("rediss://u:pw@127.0.0.1:6380").unwrap_err();
        assert!(matches!(err, BuildError::TlsNotEnabled(_)), "{err:?}");
        assert!(!err.to_string().contains("pw"));
    }

    #[test]
    fn a_cluster_url_is_one_node_named_by_its_first_seed() {
        let (config, id) =
            parse_url("redis-cluster://u:pw@127.0.0.1:7001?node=127.0.0.1:7002").unwrap();
        assert_eq!(id.to_string(), "127.0.0.1:7001");
        assert_eq!(
            cluster_seeds(&config).unwrap(),
            [
                ("127.0.0.1".to_owned(), 7001),
                ("127.0.0.1".to_owned(), 7002)
            ]
        );
        assert_eq!(config.password.as_deref(), Some("pw"));
        let (single, _) = parse_url("redis://127.0.0.1:7001").unwrap();
        assert!(cluster_seeds(&single).is_none());
    }

    #[test]
    fn from_config_takes_a_centralized_or_clustered_config_and_refuses_a_sentinel() {
        let mut given = Config::from_url("redis://u:pw@127.0.0.1:7009/2").unwrap();
        given.blocking = fred::types::config::Blocking::Error;
        given.fail_fast = false;
        let (kept, id) = from_config(given).unwrap();
        assert_eq!(id.to_string(), "127.0.0.1:7009");
        // Server, credentials and database kept; the rest is fred's default.
        assert_eq!(kept.password.as_deref(), Some("pw"));
        assert_eq!(kept.database, Some(2));
        assert_eq!(kept.blocking, fred::types::config::Blocking::Block);
        assert!(kept.fail_fast);
        let cluster = Config {
            server: ServerConfig::new_clustered(vec![("127.0.0.1", 7000)]),
            ..Default::default()
        };
        let (kept, id) = from_config(cluster).unwrap();
        assert_eq!(id.to_string(), "127.0.0.1:7000");
        assert!(cluster_seeds(&kept).is_some());
        let sentinel = Config {
            server: ServerConfig::new_sentinel(vec![("127.0.0.1", 26379)], "mymaster"),
            ..Default::default()
        };
        assert!(matches!(
            from_config(sentinel),
            Err(BuildError::InvalidNodeConfig { .. })
        ));
    }

    #[cfg(feature = "tls")]
    #[test]
    fn rediss_with_the_tls_feature_configures_tls() {
        let (config, id) = parse_url("rediss://127.0.0.1:6380").unwrap();
        assert!(config.tls.is_some());
        assert_eq!(id.port(), 6380);
    }
}
