//! What the key audit (`audit.rs`) reads and how often: which keys are
//! lock keys ([`LockKeys`], also what the leak check looks for) and the
//! audit's settings ([`AuditConfig`]).

use std::time::{Duration, Instant};

use super::nudge::AuditNudge;

/// Which keys on the nodes are lock keys.
///
/// # Examples
///
/// ```
/// let keys = redquorum_harness::LockKeys::prefixed("app:");
/// assert_eq!(keys.pattern, "app:*");
/// assert!(keys.is_lock_key("app:{r}") && !keys.is_lock_key("app:{r}:fence"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockKeys {
    /// A SCAN MATCH pattern for the lock keys. Default: `lock:*`.
    pub pattern: String,
    /// Keys matching the pattern but ending so are not lock keys (fence
    /// counters outlive locks on purpose). Default: `:fence`.
    pub exclude_suffix: String,
}

impl Default for LockKeys {
    fn default() -> Self {
        Self::prefixed("lock:")
    }
}

impl LockKeys {
    /// Every key starting with `prefix`, fence counters excepted.
    ///
    /// # Examples
    ///
    /// See [`LockKeys`].
    #[must_use]
    pub fn prefixed(prefix: &str) -> Self {
        Self {
            pattern: format!("{prefix}*"),
            exclude_suffix: ":fence".into(),
        }
    }

    /// True unless `key` ends with the excluded suffix.
    ///
    /// # Examples
    ///
    /// See [`LockKeys`].
    #[must_use]
    pub fn is_lock_key(&self, key: &str) -> bool {
        self.exclude_suffix.is_empty() || !key.ends_with(&self.exclude_suffix)
    }
}

/// What the audit reads and how often.
///
/// # Examples
///
/// ```
/// let config = redquorum_harness::AuditConfig::new(std::time::Duration::from_secs(2));
/// assert_eq!(config.every, std::time::Duration::from_millis(50));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuditConfig {
    /// The lock keys. Default: [`LockKeys::default`].
    pub keys: LockKeys,
    /// The lock TTL (a key's age is the TTL minus its PTTL).
    pub ttl: Duration,
    /// Keys younger than this are not remembered (they are normal). Default: ttl / 4.
    pub min_age: Duration,
    /// Time between two reads of every node. Default: 50 ms.
    pub every: Duration,
    /// Starts the next round early (at least 5 ms after the last): the
    /// workload nudges it on each grant, so brief holds are read while
    /// they last. Default: one nobody nudges.
    pub nudge: AuditNudge,
    /// The history's epoch. Default: when the config was made.
    pub epoch: Instant,
}

impl AuditConfig {
    /// Defaults for a lock of `ttl`.
    ///
    /// # Examples
    ///
    /// See [`AuditConfig`].
    #[must_use]
    pub fn new(ttl: Duration) -> Self {
        Self {
            keys: LockKeys::default(),
            ttl,
            min_age: ttl / 4,
            every: Duration::from_millis(50),
            nudge: AuditNudge::default(),
            epoch: Instant::now(),
        }
    }
}
