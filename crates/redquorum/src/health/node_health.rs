//! What each master says about itself, as the public API shows it: its
//! [`Role`], [`Durability`], eviction policy and uptime ([`NodeHealth`]),
//! and why its vote may be refused (health/ineligible.rs). The probes live in
//! `node/probe.rs`, the vote rules in `health/eligibility.rs`.

use std::fmt;
use std::time::Duration;

use crate::health::ineligible::Ineligible;
use crate::health::oldest_server::OLDEST_SERVER;

/// What a node is: master or replica, as far as the last probe could tell.
///
/// # Examples
///
/// ```
/// assert_eq!(redquorum::Role::Master.to_string(), "master");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Role {
    /// A master: the only kind that may take part in Redlock.
    Master,
    /// A replica of another node.
    Replica,
    /// Not probed yet, or `INFO` is denied to our user.
    #[default]
    Unknown,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Master => "master",
            Self::Replica => "replica",
            Self::Unknown => "unknown",
        })
    }
}

/// Whether a node survives a crash with every key it granted.
///
/// # Examples
///
/// ```
/// assert_eq!(redquorum::Durability::Fsync.to_string(), "aof fsync always");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Durability {
    /// AOF with `appendfsync always`: a crash loses no acknowledged write.
    Fsync,
    /// No AOF, or an AOF that fsyncs less often: a crash can lose keys.
    NotDurable,
    /// Not probed yet, or `INFO`/`CONFIG GET` is denied to our user.
    #[default]
    Unknown,
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Fsync => "aof fsync always",
            Self::NotDurable => "not durable",
            Self::Unknown => "unknown",
        })
    }
}

/// One node's health as of its last probe.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// for (node, health) in redlock.health().await {
///     println!("{node}: {health}");
///     assert_eq!(health.role(), redquorum::Role::Master);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct NodeHealth {
    pub(crate) role: Role,
    pub(crate) durability: Durability,
    pub(crate) eviction_policy: Option<String>,
    pub(crate) uptime: Option<Duration>,
    pub(crate) refusal: Option<Ineligible>,
    pub(crate) down: Option<String>,
}

impl NodeHealth {
    /// Master or replica (or unknown).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum::NodeHealth::default().role(), redquorum::Role::Unknown);
    /// ```
    #[must_use]
    pub fn role(&self) -> Role {
        self.role
    }

    /// Whether the node fsyncs every write (or unknown).
    ///
    /// # Examples
    ///
    /// ```
    /// let health = redquorum::NodeHealth::default();
    /// assert_eq!(health.durability(), redquorum::Durability::Unknown);
    /// ```
    #[must_use]
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// The node's `maxmemory-policy`, if it could be read.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum::NodeHealth::default().eviction_policy(), None);
    /// ```
    #[must_use]
    pub fn eviction_policy(&self) -> Option<&str> {
        self.eviction_policy.as_deref()
    }

    /// True when the policy may evict lock keys once `maxmemory` is reached:
    /// every policy but `noeviction` (lock keys have a TTL, so `volatile-*`
    /// evicts them too). `None` when the policy is unknown.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum::NodeHealth::default().evicts_lock_keys(), None);
    /// ```
    #[must_use]
    pub fn evicts_lock_keys(&self) -> Option<bool> {
        self.eviction_policy.as_deref().map(|p| p != "noeviction")
    }

    /// How long the node had been up when probed (or unknown).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum::NodeHealth::default().uptime(), None);
    /// ```
    #[must_use]
    pub fn uptime(&self) -> Option<Duration> {
        self.uptime
    }

    /// Why the node's votes are refused right now, if they are.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum::NodeHealth::default().refusal(), None);
    /// ```
    #[must_use]
    pub fn refusal(&self) -> Option<&Ineligible> {
        self.refusal.as_ref()
    }

    /// Why the node is down right now (operations skip it until it answers
    /// again), or `None` while it is up.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum::NodeHealth::default().down(), None);
    /// ```
    #[must_use]
    pub fn down(&self) -> Option<&str> {
        self.down.as_deref()
    }
}

impl fmt::Display for NodeHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, {}, maxmemory-policy {}, uptime {}",
            self.role,
            self.durability,
            self.eviction_policy.as_deref().unwrap_or("unknown"),
            self.uptime
                .map_or_else(|| "unknown".to_owned(), |u| format!("{}s", u.as_secs()))
        )?;
        if let Some(cause) = &self.down {
            write!(f, "; down: {cause}")?;
        }
        match &self.refusal {
            Some(reason) => write!(f, "; votes refused: {reason}"),
            None => Ok(()),
        }
    }
}

/// What one probe learned. Fields are `Unknown`/`None` when denied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Probe {
    pub(crate) role: Role,
    pub(crate) durability: Durability,
    pub(crate) eviction_policy: Option<String>,
    pub(crate) uptime: Option<Duration>,
    /// The server's `run_id`: two node URLs with the same one are one server.
    pub(crate) run_id: Option<String>,
    /// The node's clock (`server_time_usec`), µs since the Unix epoch.
    pub(crate) server_time_us: Option<i64>,
    /// The server's version (`redis_version`; Valkey reports one too).
    pub(crate) version: Option<String>,
}

impl Probe {
    /// Reads `role`, `aof_enabled`, `maxmemory_policy`, `uptime_in_seconds` and `run_id`
    /// from an `INFO` reply, and the `appendfsync` setting (if it could be read).
    pub(crate) fn parse(info: Option<&str>, appendfsync: Option<&str>) -> Self {
        let field = |name: &str| {
            info.and_then(|text| {
                text.lines()
                    .filter_map(|line| line.trim().split_once(':'))
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| value.to_owned())
            })
        };
        let role = match field("role").as_deref() {
            Some("master") => Role::Master,
            Some("slave" | "replica") => Role::Replica,
            _ => Role::Unknown,
        };
        let durability = match (field("aof_enabled").as_deref(), appendfsync) {
            (Some("0"), _) => Durability::NotDurable,
            (Some(_), Some("always")) => Durability::Fsync,
            (Some(_), Some(_)) => Durability::NotDurable,
            _ => Durability::Unknown,
        };
        Self {
            role,
            durability,
            eviction_policy: field("maxmemory_policy"),
            uptime: field("uptime_in_seconds")
                .and_then(|s| s.parse().ok())
                .map(Duration::from_secs),
            run_id: field("run_id").filter(|id| !id.is_empty()),
            server_time_us: field("server_time_usec").and_then(|s| s.parse().ok()),
            version: field("redis_version"),
        }
    }

    /// Whether the server reported a version older than [`OLDEST_SERVER`]
    /// (an unreadable one is not held against it).
    pub(crate) fn too_old(&self) -> bool {
        self.older_than(OLDEST_SERVER)
    }

    /// Whether the server reported a version older than `oldest` (an
    /// unreadable one is not held against it).
    pub(crate) fn older_than(&self, oldest: (u32, u32)) -> bool {
        let Some(version) = &self.version else {
            return false;
        };
        let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
        match (parts.next().flatten(), parts.next().flatten()) {
            (Some(major), Some(minor)) => (major, minor) < oldest,
            _ => false,
        }
    }

    /// What an operator is warned about: everything but the uptime (which
    /// changes at every probe) and the run id.
    pub(crate) fn settings(&self) -> (Role, Durability, Option<&str>) {
        (self.role, self.durability, self.eviction_policy.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "# Server\r\nredis_version:7.0.15\r\nuptime_in_seconds:42\r\n\
        # Memory\r\nmaxmemory_policy:allkeys-lru\r\n# Persistence\r\naof_enabled:1\r\n\
        # Replication\r\nrole:master\r\n";

    #[test]
    fn parse_reads_role_policy_uptime_and_durability() {
        let probe = Probe::parse(Some(INFO), Some("always"));
        assert_eq!(probe.role, Role::Master);
        assert_eq!(probe.durability, Durability::Fsync);
        assert_eq!(probe.eviction_policy.as_deref(), Some("allkeys-lru"));
        assert_eq!(probe.uptime, Some(Duration::from_secs(42)));
        let everysec = Probe::parse(Some(INFO), Some("everysec"));
        assert_eq!(everysec.durability, Durability::NotDurable);
        let no_aof = INFO.replace("aof_enabled:1", "aof_enabled:0");
        assert_eq!(
            Probe::parse(Some(&no_aof), None).durability,
            Durability::NotDurable
        );
        let replica = INFO.replace("role:master", "role:slave");
        assert_eq!(Probe::parse(Some(&replica), None).role, Role::Replica);
    }

    #[test]
    fn servers_before_5_0_are_too_old_and_an_unreadable_version_is_not() {
        let with = |version: &str| {
            let info = INFO.replace("redis_version:7.0.15", &format!("redis_version:{version}"));
            Probe::parse(Some(&info), None)
        };
        assert_eq!(with("4.0.14").version.as_deref(), Some("4.0.14"));
        for old in ["4.0.14", "3.2.12", "2.8.24", "4.9.105"] {
            assert!(with(old).too_old(), "{old}");
        }
        for fine in ["5.0.0", "5.0.10", "6.0.9", "7.0.15", "7.2.4", "10.0.1"] {
            assert!(!with(fine).too_old(), "{fine}");
        }
        for unreadable in ["", "x.y", "7"] {
            assert!(!with(unreadable).too_old(), "{unreadable:?}");
        }
        assert!(!Probe::parse(None, None).too_old());
    }

    #[test]
    fn parse_of_a_denied_probe_is_unknown() {
        assert_eq!(Probe::parse(None, None), Probe::default());
        assert_eq!(
            Probe::parse(Some(INFO), None).durability,
            Durability::Unknown
        );
    }

    #[test]
    fn parse_reads_the_run_id() {
        let info = format!("{INFO}run_id:0123abcd\r\n");
        assert_eq!(
            Probe::parse(Some(&info), None).run_id.as_deref(),
            Some("0123abcd")
        );
        assert_eq!(Probe::parse(Some(INFO), None).run_id, None);
    }

    #[test]
    fn only_a_change_of_settings_is_worth_a_warning() {
        let a = Probe::parse(Some(INFO), Some("always"));
        let later = Probe {
            uptime: Some(Duration::from_secs(47)),
            ..a.clone()
        };
        assert_eq!(a.settings(), later.settings());
        let changed = Probe {
            eviction_policy: Some("noeviction".into()),
            ..a.clone()
        };
        assert_ne!(a.settings(), changed.settings());
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(info in ".{0,200}", fsync in proptest::option::of("[a-z]{0,8}")) {
            let _ = Probe::parse(Some(&info), fsync.as_deref());
        }
    }
}
