//! The `REDQUORUM_*` environment variables: [`RedlockConfig::from_env`]
//! and [`Redlock::from_env`], the twelve-factor way to configure a
//! `Redlock` (and the same `REDQUORUM_NODES` the `redquorum` command reads).

use crate::error::BuildError;
use crate::redlock::Redlock;
use crate::setup::builder::RedlockBuilder;
use crate::setup::config::{RedlockConfig, parse_duration};

/// The environment variables [`RedlockConfig::from_env`] reads, and the field
/// each one sets.
const VARS: &[(&str, &str)] = &[
    ("REDQUORUM_NODES", "nodes"),
    ("REDQUORUM_TTL", "ttl"),
    ("REDQUORUM_WAIT", "wait"),
    ("REDQUORUM_RETRY_DELAY", "retry_delay"),
    ("REDQUORUM_RETRY_JITTER", "retry_jitter"),
    ("REDQUORUM_NODE_TIMEOUT", "node_timeout"),
    ("REDQUORUM_DRIFT_FACTOR", "drift_factor"),
    ("REDQUORUM_KEY_PREFIX", "key_prefix"),
    ("REDQUORUM_MAX_TTL", "max_ttl"),
    ("REDQUORUM_HEALTH_CHECK_INTERVAL", "health_check_interval"),
    ("REDQUORUM_FENCING", "fencing"),
    ("REDQUORUM_TLS_CA", "tls_root_certificate"),
];

impl RedlockConfig {
    /// Reads the configuration from the `REDQUORUM_*` environment variables:
    /// `REDQUORUM_NODES` (required: comma-separated URLs, none empty), `REDQUORUM_TTL`,
    /// `REDQUORUM_WAIT`, `REDQUORUM_RETRY_DELAY`, `REDQUORUM_RETRY_JITTER`,
    /// `REDQUORUM_NODE_TIMEOUT`, `REDQUORUM_MAX_TTL`,
    /// `REDQUORUM_HEALTH_CHECK_INTERVAL` (durations such as `500ms`, `10s`,
    /// `2m`), `REDQUORUM_DRIFT_FACTOR` (a number), `REDQUORUM_KEY_PREFIX`,
    /// `REDQUORUM_FENCING` (`true`/`false`) and `REDQUORUM_TLS_CA` (a file).
    /// `REDQUORUM_NODES` is the variable the `redquorum` command reads too.
    ///
    /// # Errors
    ///
    /// [`BuildError::InvalidSetting`] naming the variable when
    /// `REDQUORUM_NODES` is unset or has an empty entry (a trailing comma),
    /// or a value cannot be read (the message never repeats a node URL,
    /// which may hold a password).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// // REDQUORUM_NODES=redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379
    /// // REDQUORUM_TTL=30s
    /// let config = redquorum::RedlockConfig::from_env()?;
    /// # Ok::<(), redquorum::BuildError>(())
    /// ```
    pub fn from_env() -> Result<Self, BuildError> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// [`from_env`](Self::from_env) with the variables read through `var`
    /// instead of the process environment (for tests, or a prefix of your own).
    ///
    /// # Errors
    ///
    /// As [`from_env`](Self::from_env).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = redquorum::RedlockConfig::from_vars(|name| match name {
    ///     "REDQUORUM_NODES" => Some("redis://a:6379,redis://b:6379,redis://c:6379".into()),
    ///     "REDQUORUM_TTL" => Some("30s".into()),
    ///     _ => None,
    /// })?;
    /// assert_eq!(config.nodes.len(), 3);
    /// assert_eq!(config.ttl, Some(Duration::from_secs(30)));
    /// # Ok::<(), redquorum::BuildError>(())
    /// ```
    pub fn from_vars(
        mut var: impl FnMut(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, BuildError> {
        let mut config = RedlockConfig::default();
        for &(name, field) in VARS {
            let Some(raw) = var(name) else { continue };
            let invalid = |reason: String| BuildError::InvalidSetting {
                setting: name.to_owned(),
                reason,
            };
            let value = raw
                .to_str()
                .ok_or_else(|| invalid("not valid UTF-8".into()))?;
            let duration = || parse_duration(value).map(Some).map_err(invalid);
            match field {
                "nodes" => config.nodes = node_list(value).map_err(invalid)?,
                "ttl" => config.ttl = duration()?,
                "wait" => config.wait = duration()?,
                "retry_delay" => config.retry_delay = duration()?,
                "retry_jitter" => config.retry_jitter = duration()?,
                "node_timeout" => config.node_timeout = duration()?,
                "max_ttl" => config.max_ttl = duration()?,
                "health_check_interval" => config.health_check_interval = duration()?,
                "drift_factor" => {
                    let factor = value
                        .trim()
                        .parse()
                        .map_err(|_| invalid(format!("{value:?} is not a number")))?;
                    config.drift_factor = Some(factor);
                }
                "key_prefix" => config.key_prefix = Some(value.to_owned()),
                "fencing" => {
                    let on = match value.trim() {
                        "true" | "1" | "yes" | "on" => true,
                        "false" | "0" | "no" | "off" => false,
                        _ => return Err(invalid(format!("{value:?} is not true or false"))),
                    };
                    config.fencing = Some(on);
                }
                "tls_root_certificate" => config.tls_root_certificate = Some(value.into()),
                _ => unreachable!("every variable in VARS has a field"),
            }
        }
        if config.nodes.is_empty() {
            return Err(BuildError::InvalidSetting {
                setting: "REDQUORUM_NODES".to_owned(),
                reason: "not set: a comma-separated list of redis:// URLs, one per master".into(),
            });
        }
        Ok(config)
    }
}

/// `REDQUORUM_NODES`: comma-separated URLs, each trimmed. A blank value
/// names none (then the variable counts as unset); an empty entry in a
/// list (a trailing comma, `a,,b`) is refused, not dropped: it is a typo
/// that may have cost a node.
fn node_list(value: &str) -> Result<Vec<String>, String> {
    if value.trim().is_empty() {
        return Ok(Vec::new());
    }
    let entries: Vec<&str> = value.split(',').map(str::trim).collect();
    if let Some(at) = entries.iter().position(|entry| entry.is_empty()) {
        return Err(format!(
            "entry {} of {} is empty (a trailing comma?): give comma-separated node URLs",
            at + 1,
            entries.len()
        ));
    }
    Ok(entries.into_iter().map(str::to_owned).collect())
}

impl Redlock {
    /// A `Redlock` configured by the `REDQUORUM_*` environment variables
    /// ([`RedlockConfig::from_env`] lists them): the twelve-factor way, and
    /// the same `REDQUORUM_NODES` the `redquorum` command reads.
    ///
    /// # Errors
    ///
    /// Any [`BuildError`]: a missing `REDQUORUM_NODES` or unreadable value
    /// ([`BuildError::InvalidSetting`]), an unreadable CA file, or whatever
    /// [`RedlockBuilder::build`] refuses.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // REDQUORUM_NODES=redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379
    /// let redlock = redquorum::Redlock::from_env()?;
    /// let lock = redlock.lock("reports:nightly").await?;
    /// lock.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn from_env() -> Result<Redlock, BuildError> {
        RedlockBuilder::from_config(&RedlockConfig::from_env()?)?.build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn vars<'a>(
        pairs: &'a [(&'a str, &'a str)],
    ) -> impl FnMut(&str) -> Option<std::ffi::OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).into())
        }
    }

    #[test]
    fn every_variable_sets_its_field() {
        let config = RedlockConfig::from_vars(vars(&[
            (
                "REDQUORUM_NODES",
                " redis://a:1, redis://u:pw@b:2 ,redis://c:3",
            ),
            ("REDQUORUM_TTL", "30s"),
            ("REDQUORUM_WAIT", "1m"),
            ("REDQUORUM_RETRY_DELAY", "10ms"),
            ("REDQUORUM_RETRY_JITTER", "20ms"),
            ("REDQUORUM_NODE_TIMEOUT", "50ms"),
            ("REDQUORUM_DRIFT_FACTOR", "0.02"),
            ("REDQUORUM_KEY_PREFIX", "app:lock:"),
            ("REDQUORUM_MAX_TTL", "2m"),
            ("REDQUORUM_HEALTH_CHECK_INTERVAL", "1s"),
            ("REDQUORUM_FENCING", "false"),
            ("REDQUORUM_TLS_CA", "/etc/ca.pem"),
        ]))
        .unwrap();
        let ms = Duration::from_millis;
        assert_eq!(
            config.nodes,
            ["redis://a:1", "redis://u:pw@b:2", "redis://c:3"]
        );
        assert_eq!(config.ttl, Some(ms(30_000)));
        assert_eq!(config.wait, Some(ms(60_000)));
        assert_eq!(config.retry_delay, Some(ms(10)));
        assert_eq!(config.retry_jitter, Some(ms(20)));
        assert_eq!(config.node_timeout, Some(ms(50)));
        assert_eq!(config.drift_factor, Some(0.02));
        assert_eq!(config.key_prefix.as_deref(), Some("app:lock:"));
        assert_eq!(config.max_ttl, Some(ms(120_000)));
        assert_eq!(config.health_check_interval, Some(ms(1_000)));
        assert_eq!(config.fencing, Some(false));
        assert_eq!(config.tls_root_certificate, Some("/etc/ca.pem".into()));
        assert!(!format!("{config:?}").contains("pw"));
    }

    #[test]
    fn an_empty_entry_in_the_node_list_is_refused_not_dropped() {
        for (list, entry) in [
            ("redis://a:1,redis://b:2,redis://c:3,", "entry 4 of 4"),
            ("redis://a:1,,redis://b:2,redis://c:3", "entry 2 of 4"),
            (" ,redis://a:1", "entry 1 of 2"),
        ] {
            let err = RedlockConfig::from_vars(vars(&[("REDQUORUM_NODES", list)])).unwrap_err();
            let text = err.to_string();
            assert!(text.starts_with("REDQUORUM_NODES: "), "{text}");
            assert!(
                text.contains(&format!("{entry} is empty")),
                "{list}: {text}"
            );
        }
    }

    #[test]
    fn a_missing_node_list_or_a_bad_value_names_the_variable() {
        let err = RedlockConfig::from_vars(vars(&[("REDQUORUM_TTL", "1s")])).unwrap_err();
        assert!(
            err.to_string().starts_with("REDQUORUM_NODES: not set"),
            "{err}"
        );
        let err = RedlockConfig::from_vars(vars(&[
            ("REDQUORUM_NODES", "redis://a:1"),
            ("REDQUORUM_TTL", "10 parsecs"),
        ]))
        .unwrap_err();
        assert!(
            err.to_string().starts_with("REDQUORUM_TTL: \"10 parsecs\""),
            "{err}"
        );
        let err = RedlockConfig::from_vars(vars(&[
            ("REDQUORUM_NODES", "redis://a:1"),
            ("REDQUORUM_FENCING", "maybe"),
        ]))
        .unwrap_err();
        assert!(
            matches!(err, BuildError::InvalidSetting { ref setting, .. } if setting == "REDQUORUM_FENCING")
        );
    }
}
