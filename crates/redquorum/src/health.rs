//! Node health: what each master says about itself (role, eviction policy,
//! persistence, uptime), probed in the background, and the delayed-restart
//! rule that refuses the votes of a node that may have forgotten its keys.
//!
//! Redlock's safety needs every node to remember the keys it granted for
//! their whole TTL. A node without `appendfsync always` that crashed and came
//! back empty breaks that, unless it stays out of every quorum until the
//! largest TTL has passed since it started ("delayed restart"). With
//! [`RedlockBuilder::max_ttl`](crate::RedlockBuilder::max_ttl) set, redquorum
//! enforces this itself: such a node's votes are refused
//! ([`NodeOutcome::Refused`](crate::NodeOutcome::Refused)) until its uptime
//! reaches the max TTL.
//!
//! Probes never run on the lock path: a background task per node probes after
//! every (re)connection and then periodically, and votes read the cached
//! result. A reconnection seen at vote time (possibly a restart) makes the
//! node's votes refused until the next probe has run, so a restart cannot slip
//! in between two probes. (fred announces a new connection before it sends
//! anything on it, so a reply that came over a new connection is always
//! preceded by the announcement the vote path checks.)

use crate::sync::lock;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fred::types::config::Server;
use tokio::sync::broadcast::{self, error::TryRecvError};

/// Why a node's vote does not count toward a quorum.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum::Ineligible;
///
/// let reason = Ineligible::RecentRestart {
///     uptime: Duration::from_secs(3),
///     max_ttl: Duration::from_secs(30),
/// };
/// assert_eq!(reason.to_string(), "not durable and up for 3s, less than the max ttl 30s");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ineligible {
    /// The node is a replica, not an independent master.
    Replica,
    /// The node does not fsync every write and started less than the max TTL
    /// ago: it may have forgotten keys it granted before a crash.
    RecentRestart {
        /// How long the node has been up.
        uptime: Duration,
        /// The configured maximum lock TTL.
        max_ttl: Duration,
    },
    /// The node (re)connected and has not been probed since: it may just
    /// have restarted.
    Unverified,
    /// The node is not known to fsync every write and its uptime cannot be
    /// read (`INFO` denied to the user), so the delayed-restart rule cannot
    /// clear it.
    UnknownUptime,
}

impl fmt::Display for Ineligible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Replica => f.write_str("a replica, not a master"),
            Self::RecentRestart { uptime, max_ttl } => write!(
                f,
                "not durable and up for {}s, less than the max ttl {}s",
                uptime.as_secs(),
                max_ttl.as_secs()
            ),
            Self::Unverified => f.write_str("reconnected and not probed yet"),
            Self::UnknownUptime => {
                f.write_str("not known to be durable and its uptime is unknown (INFO denied)")
            }
        }
    }
}

impl Ineligible {
    /// A short stable name, used as the `reason` metric label.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Self::Replica => "replica",
            Self::RecentRestart { .. } => "recent_restart",
            Self::Unverified => "unverified",
            Self::UnknownUptime => "unknown_uptime",
        }
    }
}

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
    role: Role,
    durability: Durability,
    eviction_policy: Option<String>,
    uptime: Option<Duration>,
    refusal: Option<Ineligible>,
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
}

impl Probe {
    /// Reads `role`, `aof_enabled`, `maxmemory_policy` and `uptime_in_seconds`
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
        }
    }
}

/// The decision rule, pure: why a node with this state may not vote at `now`.
fn refusal(
    probe: &Probe,
    started_at: Option<Instant>,
    verified: bool,
    max_ttl: Option<Duration>,
    now: Instant,
) -> Option<Ineligible> {
    if probe.role == Role::Replica {
        return Some(Ineligible::Replica);
    }
    let max_ttl = max_ttl?;
    if !verified {
        return Some(Ineligible::Unverified);
    }
    if probe.durability == Durability::Fsync {
        return None;
    }
    // Unknown durability counts as not durable, and unknown uptime (INFO
    // denied) as a node that may have just restarted: the rule must not be
    // skipped because it cannot be checked.
    let Some(started_at) = started_at else {
        return Some(Ineligible::UnknownUptime);
    };
    let uptime = now.saturating_duration_since(started_at);
    (uptime < max_ttl).then_some(Ineligible::RecentRestart { uptime, max_ttl })
}

/// The default time between periodic probes.
pub(crate) const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// The cached health of one node, shared by its checker task and its votes.
#[derive(Debug)]
pub(crate) struct Health {
    max_ttl: Option<Duration>,
    interval: Duration,
    state: Mutex<State>,
    /// Reconnection events as seen by the vote path (the checker task has its own receiver).
    reconnects: Mutex<broadcast::Receiver<Server>>,
}

#[derive(Debug, Default)]
struct State {
    probe: Probe,
    /// `probe time - uptime`, rounded so that the node seems younger, never older.
    started_at: Option<Instant>,
    /// Reconnections seen so far, by either receiver (both see the same sequence).
    reconnects_seen: u64,
    reconnects_seen_by_votes: u64,
    reconnects_seen_by_checker: u64,
    /// `reconnects_seen` when the last successful probe started; `None` before the first.
    probed_through: Option<u64>,
}

impl Health {
    pub(crate) fn new(reconnects: broadcast::Receiver<Server>) -> Self {
        Self {
            max_ttl: None,
            interval: DEFAULT_INTERVAL,
            state: Mutex::new(State::default()),
            reconnects: Mutex::new(reconnects),
        }
    }

    /// Enables the delayed-restart rule for leases up to `max_ttl` (`None`: off),
    /// and sets the time between periodic probes.
    pub(crate) fn configure(&mut self, max_ttl: Option<Duration>, interval: Duration) {
        self.max_ttl = max_ttl;
        self.interval = interval;
    }

    /// The time between periodic probes.
    pub(crate) fn interval(&self) -> Duration {
        self.interval
    }

    /// Counts a reconnection seen by the checker task.
    pub(crate) fn checker_saw_reconnect(&self, events: u64) {
        let mut state = lock(&self.state);
        state.reconnects_seen_by_checker += events;
        state.reconnects_seen = state
            .reconnects_seen_by_checker
            .max(state.reconnects_seen_by_votes);
    }

    /// The reconnection count a probe starting now covers.
    pub(crate) fn probe_epoch(&self) -> u64 {
        self.drain_reconnects();
        lock(&self.state).reconnects_seen
    }

    /// Stores a completed probe that started at `epoch` (and at `started` in
    /// time); returns the previous probe, to log changes only.
    pub(crate) fn record(&self, probe: Probe, epoch: u64, started: Instant) -> Probe {
        let mut state = lock(&self.state);
        state.started_at = probe.uptime.map(|uptime| {
            // uptime_in_seconds is truncated: the node started at most 1 s
            // before `started - uptime`; assuming the later time is the safe side.
            started.checked_sub(uptime).unwrap_or(started)
        });
        state.probed_through = Some(state.probed_through.map_or(epoch, |p| p.max(epoch)));
        std::mem::replace(&mut state.probe, probe)
    }

    /// Why this node's vote is refused now, if it is. Cheap: no I/O.
    pub(crate) fn refusal(&self) -> Option<Ineligible> {
        self.drain_reconnects();
        let state = lock(&self.state);
        let verified = state
            .probed_through
            .is_some_and(|p| p >= state.reconnects_seen);
        refusal(
            &state.probe,
            state.started_at,
            verified,
            self.max_ttl,
            Instant::now(),
        )
    }

    /// A snapshot for `Redlock::health`.
    pub(crate) fn snapshot(&self) -> NodeHealth {
        let refusal = self.refusal();
        let state = lock(&self.state);
        NodeHealth {
            role: state.probe.role,
            durability: state.probe.durability,
            eviction_policy: state.probe.eviction_policy.clone(),
            uptime: state.started_at.map(|s| s.elapsed()),
            refusal,
        }
    }

    /// Counts reconnections that happened since the vote path last looked.
    fn drain_reconnects(&self) {
        let mut events = 0;
        {
            let mut receiver = lock(&self.reconnects);
            loop {
                match receiver.try_recv() {
                    Ok(_) => events += 1,
                    Err(TryRecvError::Lagged(n)) => events += n,
                    Err(TryRecvError::Empty | TryRecvError::Closed) => break,
                }
            }
        }
        if events > 0 {
            let mut state = lock(&self.state);
            state.reconnects_seen_by_votes += events;
            state.reconnects_seen = state
                .reconnects_seen_by_checker
                .max(state.reconnects_seen_by_votes);
        }
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
    fn parse_of_a_denied_probe_is_unknown() {
        assert_eq!(Probe::parse(None, None), Probe::default());
        assert_eq!(
            Probe::parse(Some(INFO), None).durability,
            Durability::Unknown
        );
    }

    #[test]
    fn refusal_follows_the_delayed_restart_rule() {
        let now = Instant::now();
        let max = Some(Duration::from_secs(10));
        let young = Some(now - Duration::from_secs(3));
        let old = Some(now - Duration::from_secs(11));
        let volatile = Probe {
            role: Role::Master,
            durability: Durability::NotDurable,
            ..Probe::default()
        };
        let fsync = Probe {
            durability: Durability::Fsync,
            ..volatile.clone()
        };
        assert!(matches!(
            refusal(&volatile, young, true, max, now),
            Some(Ineligible::RecentRestart { .. })
        ));
        assert_eq!(refusal(&volatile, old, true, max, now), None);
        assert_eq!(refusal(&fsync, young, true, max, now), None);
        // the rule is off without a max ttl
        assert_eq!(refusal(&volatile, young, true, None, now), None);
        // unknown uptime (INFO denied) cannot clear a node that is not durable
        assert_eq!(
            refusal(&volatile, None, true, max, now),
            Some(Ineligible::UnknownUptime)
        );
        assert_eq!(refusal(&fsync, None, true, max, now), None);
        assert_eq!(
            refusal(&volatile, old, false, max, now),
            Some(Ineligible::Unverified)
        );
        let replica = Probe {
            role: Role::Replica,
            ..fsync
        };
        assert_eq!(
            refusal(&replica, old, true, None, now),
            Some(Ineligible::Replica)
        );
        // unknown durability counts as not durable
        let unknown = Probe {
            durability: Durability::Unknown,
            ..volatile.clone()
        };
        assert!(refusal(&unknown, young, true, max, now).is_some());
    }

    fn role(index: u8) -> Role {
        [Role::Master, Role::Replica, Role::Unknown][usize::from(index % 3)]
    }

    fn durability(index: u8) -> Durability {
        [
            Durability::Fsync,
            Durability::NotDurable,
            Durability::Unknown,
        ][usize::from(index % 3)]
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(info in ".{0,200}", fsync in proptest::option::of("[a-z]{0,8}")) {
            let _ = Probe::parse(Some(&info), fsync.as_deref());
        }

        #[test]
        fn a_recent_restart_ends_exactly_at_max_ttl(
            role_index in 0u8..3,
            durability_index in 0u8..3,
            up_ms in 0u64..100_000,
            max_ms in 1u64..100_000,
        ) {
            let probe = Probe { role: role(role_index), durability: durability(durability_index), ..Probe::default() };
            let now = Instant::now() + Duration::from_secs(200);
            let started = Some(now - Duration::from_millis(up_ms));
            let max_ttl = Duration::from_millis(max_ms);
            let refused = refusal(&probe, started, true, Some(max_ttl), now);
            let expected = if probe.role == Role::Replica {
                Some(Ineligible::Replica)
            } else if probe.durability != Durability::Fsync && up_ms < max_ms {
                Some(Ineligible::RecentRestart { uptime: Duration::from_millis(up_ms), max_ttl })
            } else {
                None
            };
            proptest::prop_assert_eq!(&refused, &expected);
            // without the rule only replicas are refused, whatever the uptime
            let off = refusal(&probe, started, false, None, now);
            proptest::prop_assert_eq!(off.is_some(), probe.role == Role::Replica);
        }
    }

    #[test]
    fn a_reconnect_seen_at_vote_time_unverifies_until_the_next_probe() {
        let (tx, rx) = broadcast::channel(4);
        let mut health = Health::new(rx);
        health.configure(Some(Duration::from_secs(1)), DEFAULT_INTERVAL);
        let durable = Probe {
            role: Role::Master,
            durability: Durability::Fsync,
            ..Probe::default()
        };
        assert_eq!(health.refusal(), Some(Ineligible::Unverified));
        let epoch = health.probe_epoch();
        health.record(durable.clone(), epoch, Instant::now());
        assert_eq!(health.refusal(), None);
        tx.send(Server::new("127.0.0.1", 1)).unwrap();
        assert_eq!(health.refusal(), Some(Ineligible::Unverified));
        // the checker task sees the same event later: counts must not double
        health.checker_saw_reconnect(1);
        let epoch = health.probe_epoch();
        health.record(durable, epoch, Instant::now());
        assert_eq!(health.refusal(), None);
    }
}
