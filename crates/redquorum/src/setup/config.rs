//! [`RedlockConfig`]: a `Redlock` configuration as data, read from the
//! environment (`setup/env.rs`) or (feature `serde`) deserialised from any serde
//! format, and turned into a [`RedlockBuilder`].
//!
//! Every field is optional except the nodes, so a config file states only
//! what it changes; an unset field keeps the builder's documented default.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::BuildError;
use crate::node::connection;
use crate::redlock::Redlock;
use crate::setup::builder::RedlockBuilder;

/// A `Redlock` configuration as data: node URLs and the builder's knobs.
///
/// Read it from the environment with [`from_env`](Self::from_env), or, with
/// the `serde` feature, deserialise it from a config file (unknown fields
/// are refused; durations are strings such as `"500ms"`, `"10s"`, `"2m"`).
/// [`RedlockBuilder::from_config`] turns it into a builder. `None` keeps the
/// builder's default. `Debug` hides the passwords in node URLs.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// use std::time::Duration;
/// use redquorum::{RedlockBuilder, RedlockConfig};
///
/// let mut config = RedlockConfig::default();
/// config.nodes = cluster.urls(); // e.g. ["redis://10.0.0.1:6379", ...]
/// config.ttl = Some(Duration::from_secs(5));
/// let redlock = RedlockBuilder::from_config(&config)?.build()?;
/// assert_eq!(redlock.options().ttl, Duration::from_secs(5));
/// # Ok(()) }
/// ```
///
/// With the `serde` feature, from TOML, YAML, JSON...:
///
/// ```toml
/// [redquorum]
/// nodes = ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379", "redis://10.0.0.3:6379"]
/// ttl = "10s"
/// max_ttl = "60s"
/// ```
#[derive(Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
#[non_exhaustive]
pub struct RedlockConfig {
    /// The masters: `redis://[user:password@]host:port` or `rediss://...`.
    /// Env: `REDQUORUM_NODES`, comma-separated (required).
    pub nodes: Vec<String>,
    /// [`RedlockBuilder::ttl`]. Env: `REDQUORUM_TTL`.
    #[cfg_attr(feature = "serde", serde(with = "duration"))]
    pub ttl: Option<Duration>,
    /// [`RedlockBuilder::wait`]. Env: `REDQUORUM_WAIT`.
    #[cfg_attr(feature = "serde", serde(with = "duration"))]
    pub wait: Option<Duration>,
    /// [`RedlockBuilder::retry_delay`]. Env: `REDQUORUM_RETRY_DELAY`.
    #[cfg_attr(feature = "serde", serde(with = "duration"))]
    pub retry_delay: Option<Duration>,
    /// [`RedlockBuilder::retry_jitter`]. Env: `REDQUORUM_RETRY_JITTER`.
    #[cfg_attr(feature = "serde", serde(with = "duration"))]
    pub retry_jitter: Option<Duration>,
    /// [`RedlockBuilder::node_timeout`]. Env: `REDQUORUM_NODE_TIMEOUT`.
    #[cfg_attr(feature = "serde", serde(with = "duration"))]
    pub node_timeout: Option<Duration>,
    /// [`RedlockBuilder::drift_factor`]. Env: `REDQUORUM_DRIFT_FACTOR`.
    pub drift_factor: Option<f64>,
    /// [`RedlockBuilder::key_prefix`]. Env: `REDQUORUM_KEY_PREFIX`.
    pub key_prefix: Option<String>,
    /// [`RedlockBuilder::max_ttl`] (the delayed-restart rule). Env: `REDQUORUM_MAX_TTL`.
    #[cfg_attr(feature = "serde", serde(with = "duration"))]
    pub max_ttl: Option<Duration>,
    /// [`RedlockBuilder::health_check_interval`]. Env: `REDQUORUM_HEALTH_CHECK_INTERVAL`.
    #[cfg_attr(feature = "serde", serde(with = "duration"))]
    pub health_check_interval: Option<Duration>,
    /// [`LockOptions::fencing`](crate::LockOptions::fencing). Env:
    /// `REDQUORUM_FENCING` (`true` or `false`).
    pub fencing: Option<bool>,
    /// A file with the CA certificate (PEM or DER) for `rediss://` nodes,
    /// read by [`RedlockBuilder::from_config`]
    /// ([`RedlockBuilder::tls_root_certificate`]). Env: `REDQUORUM_TLS_CA`.
    pub tls_root_certificate: Option<PathBuf>,
}

impl fmt::Debug for RedlockConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|u| connection::redact_url(u))
            .collect();
        f.debug_struct("RedlockConfig")
            .field("nodes", &nodes)
            .field("ttl", &self.ttl)
            .field("wait", &self.wait)
            .field("retry_delay", &self.retry_delay)
            .field("retry_jitter", &self.retry_jitter)
            .field("node_timeout", &self.node_timeout)
            .field("drift_factor", &self.drift_factor)
            .field("key_prefix", &self.key_prefix)
            .field("max_ttl", &self.max_ttl)
            .field("health_check_interval", &self.health_check_interval)
            .field("fencing", &self.fencing)
            .field("tls_root_certificate", &self.tls_root_certificate)
            .finish()
    }
}

impl RedlockBuilder {
    /// A builder with `config`'s nodes and settings; unset fields keep
    /// their defaults. Reads the `tls_root_certificate` file, if any.
    /// Validation happens at [`build`](Self::build), as for any builder.
    ///
    /// # Errors
    ///
    /// [`BuildError::TlsRootCertificateFile`] when the CA file cannot be read.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let mut config = redquorum::RedlockConfig::default();
    /// config.nodes = cluster.urls();
    /// config.key_prefix = Some("billing:lock:".into());
    /// let redlock = redquorum::RedlockBuilder::from_config(&config)?.build()?;
    /// assert_eq!(redlock.key("invoices"), "billing:lock:{invoices}");
    /// # Ok(()) }
    /// ```
    pub fn from_config(config: &RedlockConfig) -> Result<RedlockBuilder, BuildError> {
        let mut builder = Redlock::builder().nodes(&config.nodes);
        let mut options = *builder.options();
        options.ttl = config.ttl.unwrap_or(options.ttl);
        options.wait = config.wait.unwrap_or(options.wait);
        options.retry_delay = config.retry_delay.unwrap_or(options.retry_delay);
        options.retry_jitter = config.retry_jitter.unwrap_or(options.retry_jitter);
        options.fencing = config.fencing.unwrap_or(options.fencing);
        builder = builder.lock_options(options);
        if let Some(timeout) = config.node_timeout {
            builder = builder.node_timeout(timeout);
        }
        if let Some(factor) = config.drift_factor {
            builder = builder.drift_factor(factor);
        }
        if let Some(prefix) = &config.key_prefix {
            builder = builder.key_prefix(prefix.clone());
        }
        if let Some(max_ttl) = config.max_ttl {
            builder = builder.max_ttl(max_ttl);
        }
        if let Some(interval) = config.health_check_interval {
            builder = builder.health_check_interval(interval);
        }
        if let Some(path) = &config.tls_root_certificate {
            let certificate =
                std::fs::read(path).map_err(|source| BuildError::TlsRootCertificateFile {
                    path: path.clone(),
                    source,
                })?;
            builder = builder.tls_root_certificate(certificate);
        }
        Ok(builder)
    }
}

/// `Option<Duration>` as a human-readable string in config files.
#[cfg(feature = "serde")]
mod duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        let text = Option::<String>::deserialize(deserializer)?;
        text.map(|t| super::parse_duration(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// A duration written for people: `500ms`, `10s`, `2m`, `1h 30m` (a
/// config file's values and the `REDQUORUM_*` variables, setup/env.rs).
pub(crate) fn parse_duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value.trim())
        .map_err(|e| format!("{value:?} is not a duration such as 500ms, 10s or 2m ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_config_applies_the_settings_and_keeps_the_defaults() {
        let config = RedlockConfig {
            nodes: vec!["redis://a:1".into()],
            ttl: Some(Duration::from_secs(3)),
            fencing: Some(false),
            ..Default::default()
        };
        let builder = RedlockBuilder::from_config(&config).unwrap();
        assert_eq!(builder.options().ttl, Duration::from_secs(3));
        assert!(!builder.options().fencing);
        assert_eq!(
            builder.options().wait,
            crate::options::LockOptions::default().wait
        );
    }

    #[test]
    fn an_unreadable_ca_file_is_a_named_error() {
        let config = RedlockConfig {
            nodes: vec!["rediss://a:1".into()],
            tls_root_certificate: Some("/nonexistent/ca.pem".into()),
            ..Default::default()
        };
        let err = RedlockBuilder::from_config(&config).unwrap_err();
        assert!(
            matches!(err, BuildError::TlsRootCertificateFile { .. }),
            "{err:?}"
        );
    }

    #[cfg(feature = "serde")]
    #[test]
    fn deserialises_with_human_durations_and_refuses_unknown_fields() {
        let config: RedlockConfig = serde_json::from_str(
            r#"{"nodes":["redis://a:1","redis://b:2","redis://c:3"],"ttl":"10s","max_ttl":"1m"}"#,
        )
        .unwrap();
        assert_eq!(config.ttl, Some(Duration::from_secs(10)));
        assert_eq!(config.max_ttl, Some(Duration::from_secs(60)));
        assert_eq!(config.wait, None);
        assert!(serde_json::from_str::<RedlockConfig>(r#"{"nodes":[],"tll":"1s"}"#).is_err());
        assert!(serde_json::from_str::<RedlockConfig>(r#"{"ttl":"soon"}"#).is_err());
    }
}
