//! `FaultKind`: the faults the nemesis can inject, by name, with what each
//! needs (process control, client groups) and what it may do to commands
//! on their way (the key audit excuses those). Its own file, so the fault
//! log, the checker and the nemesis all name it without importing each other.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A kind of fault the nemesis injects.
///
/// # Examples
///
/// ```
/// use redquorum_harness::FaultKind;
/// assert_eq!("kill".parse::<FaultKind>(), Ok(FaultKind::Kill));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FaultKind {
    /// `kill -9`, down for a random time up to the restart delay, restart.
    Kill,
    /// SIGSTOP, then SIGCONT.
    Pause,
    /// Added latency on the node's proxies, sometimes above the node timeout.
    Latency,
    /// The proxies hold all bytes, then deliver them (late writes).
    Stall,
    /// A storm of connection resets on the proxies.
    Reset,
    /// The node's clock jumps forward, within the drift budget (a TTL shift).
    Clock,
    /// One client group is cut off from some nodes (its own proxies refuse
    /// or hold its bytes); the other groups still reach them.
    Partition,
    /// The node's script cache is emptied (`SCRIPT FLUSH`) again and again,
    /// every 0–100 ms for the fault's length: calls answer NOSCRIPT, and
    /// their resends race the script's reload by other calls. Half the
    /// flushes of a minority also slow the other nodes' replies (a
    /// `SlowMajority` beside it), so the split answers count.
    ScriptFlush,
    /// The node's wall clock strobes: it jumps forward by up to the drift
    /// budget and back, many times (libfaketime; nodes with a controlled clock).
    Strobe,
    /// One client group's process stops (its runtime frozen), then resumes:
    /// holders in it may wake past their deadline (breaks assumption (b) for
    /// them: only fencing keeps the protected data safe).
    ClientPause,
    /// The node forgets every lock key (outside the assumptions: a node that
    /// forgets keys it granted breaks the quorums' intersection).
    Forget,
    /// A majority of the nodes answers slowly: their replies (not the
    /// requests) are held below the lock's node timeout
    /// (`NemesisConfig::majority_latency`), so the nodes act at once, every
    /// quorum waits for a slow answer, and an acquire's elapsed time is large.
    SlowMajority,
    /// A majority of the nodes is killed and restarted (at most once every
    /// `NemesisConfig::majority_restart_every`). Within the assumptions
    /// only with the delayed-restart rule: the lock's `max_ttl`, so a
    /// restarted node's vote is refused until every hold it may have lost
    /// has expired.
    RestartMajority,
    /// Nodes lose the fence counters (every key matching the lock keys'
    /// pattern and ending in `:fence`), as when they expire after a day
    /// idle: every node whose clock leads (at or past every earlier reading
    /// of any node's) and any others when those are a majority, else a
    /// majority or more of the leading ones (`clock_leads.rs`). Within the
    /// assumptions: every later quorum meets a leading node that lost its
    /// counter (it proposes from its clock, above every token issued
    /// before) or a node that kept it.
    FenceLoss,
    /// Cluster masters only: the slot of a lock key the workload uses moves
    /// to another shard on one or more masters, with its keys and their
    /// TTLs, in one go or in two steps (the lock record and its fence
    /// counter first, then a pause in which operations on them meet `ASK`
    /// or `TRYAGAIN`, then the rest). Nothing is lost, so it is within the
    /// assumptions on any number of masters.
    Migrate,
    /// Cluster masters only: the replica of the shard serving a lock key
    /// takes over, on one or more masters, once it has every write its
    /// primary acknowledged (a marker written and `WAIT`ed for). Within the
    /// assumptions on any number of masters: the new primary has what the
    /// old one had when the marker was acknowledged (a hold written in the
    /// moment after may be lost), and the lock refuses its votes for the
    /// longest lease, which is what keeps it safe.
    Failover,
    /// Cluster masters only: the replica of the shard serving a lock key is
    /// promoted WITHOUT the writes made while the fault lasts (its link was
    /// cut, then its primary killed), on 1 to N/2 + 1 masters at once (the
    /// same holds lost on each), as a crash that loses the holds on those
    /// masters. Within the assumptions only with the new-primary rule: the
    /// lock refuses a new primary's votes for the longest lease. The old
    /// primary restarts empty and follows the new one as its replica.
    LaggingFailover,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 17] = [
        FaultKind::Kill,
        FaultKind::Pause,
        FaultKind::Latency,
        FaultKind::Stall,
        FaultKind::Reset,
        FaultKind::Clock,
        FaultKind::Partition,
        FaultKind::ScriptFlush,
        FaultKind::Strobe,
        FaultKind::ClientPause,
        FaultKind::Forget,
        FaultKind::SlowMajority,
        FaultKind::RestartMajority,
        FaultKind::FenceLoss,
        FaultKind::Migrate,
        FaultKind::Failover,
        FaultKind::LaggingFailover,
    ];

    /// The kinds for cluster masters (`all` with `--cluster`): slot
    /// migration and the two failovers, each within the assumptions.
    pub const CLUSTER: [FaultKind; 3] = [
        FaultKind::Migrate,
        FaultKind::Failover,
        FaultKind::LaggingFailover,
    ];

    /// The kinds within Redlock's assumptions for any workload (on a
    /// minority of nodes at a time, for the node faults): `all` on the
    /// command line. (`script-flush` was left out while the previous engine
    /// sent its NOSCRIPT fallback after the unwind; the one engine resends
    /// only calls nothing overtook, see docs/torture.md.)
    /// `slow-majority` and `restart-majority` strike a majority within the
    /// assumptions (the latter needs the delayed-restart rule), and so does
    /// `fence-loss`: the nemesis aims it at nodes whose clocks lead
    /// (`clock_leads.rs`), so the clock floor it makes the lock rely on holds.
    pub const SAFE: [FaultKind; 12] = [
        FaultKind::Kill,
        FaultKind::Pause,
        FaultKind::Latency,
        FaultKind::Stall,
        FaultKind::Reset,
        FaultKind::Clock,
        FaultKind::Partition,
        FaultKind::ScriptFlush,
        FaultKind::Strobe,
        FaultKind::SlowMajority,
        FaultKind::RestartMajority,
        FaultKind::FenceLoss,
    ];

    /// The lower-case name, as `--nemesis` takes it.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::FaultKind::ScriptFlush.name(), "script-flush");
    /// ```
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Pause => "pause",
            FaultKind::Latency => "latency",
            FaultKind::Stall => "stall",
            FaultKind::Reset => "reset",
            FaultKind::Clock => "clock",
            FaultKind::Partition => "partition",
            FaultKind::ScriptFlush => "script-flush",
            FaultKind::Strobe => "strobe",
            FaultKind::ClientPause => "client-pause",
            FaultKind::Forget => "forget",
            FaultKind::SlowMajority => "slow-majority",
            FaultKind::RestartMajority => "restart-majority",
            FaultKind::FenceLoss => "fence-loss",
            FaultKind::Migrate => "migrate",
            FaultKind::Failover => "failover",
            FaultKind::LaggingFailover => "lagging-failover",
        }
    }

    /// True for faults that need control of the node's process.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum_harness::FaultKind::Kill.needs_process());
    /// assert!(!redquorum_harness::FaultKind::Reset.needs_process());
    /// ```
    #[must_use]
    pub fn needs_process(self) -> bool {
        matches!(
            self,
            FaultKind::Kill | FaultKind::Pause | FaultKind::Strobe | FaultKind::RestartMajority
        )
    }

    /// True for the faults of cluster masters ([`CLUSTER`](Self::CLUSTER)):
    /// they move slots between a master's shards or promote a shard's
    /// replica, so they need a [`ShardedCluster`](crate::ShardedCluster).
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::FaultKind;
    /// assert!(FaultKind::LaggingFailover.needs_cluster());
    /// assert!(!FaultKind::Kill.needs_cluster());
    /// ```
    #[must_use]
    pub fn needs_cluster(self) -> bool {
        Self::CLUSTER.contains(&self)
    }

    /// True for faults that hit a client group rather than nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum_harness::FaultKind::ClientPause.is_client_fault());
    /// ```
    #[must_use]
    pub fn is_client_fault(self) -> bool {
        matches!(self, FaultKind::Partition | FaultKind::ClientPause)
    }

    /// True for faults that can hold a command back on its way to the node
    /// (so an unwind or release may land late, or not at all, and a key
    /// outlive its owner for up to its TTL): the key audit excuses these.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::FaultKind;
    /// assert!(FaultKind::Stall.delays_commands());
    /// assert!(!FaultKind::ScriptFlush.delays_commands());
    /// ```
    #[must_use]
    pub fn delays_commands(self) -> bool {
        matches!(
            self,
            FaultKind::Kill
                | FaultKind::RestartMajority
                | FaultKind::SlowMajority
                | FaultKind::Pause
                | FaultKind::Latency
                | FaultKind::Stall
                | FaultKind::Reset
                | FaultKind::Partition
                | FaultKind::ClientPause
                // A release meets a redirect or a dead primary, fails, and
                // its hold lives on to its TTL.
                | FaultKind::Migrate
                | FaultKind::Failover
                | FaultKind::LaggingFailover
        )
    }

    /// Parses `all` (the [`SAFE`](Self::SAFE) kinds) or a comma list such as `kill,pause,latency`.
    ///
    /// # Errors
    ///
    /// The first unknown name.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::FaultKind;
    /// assert_eq!(FaultKind::parse_list("all").unwrap().len(), 12);
    /// assert_eq!(FaultKind::parse_list("kill, stall").unwrap(), vec![FaultKind::Kill, FaultKind::Stall]);
    /// assert!(FaultKind::parse_list("flood").is_err());
    /// ```
    pub fn parse_list(list: &str) -> Result<Vec<FaultKind>, String> {
        Self::parse_list_with(list, &Self::SAFE)
    }

    /// As [`parse_list`](Self::parse_list), with the name `all` standing for the kinds `all`
    /// (for cluster masters: [`CLUSTER`](Self::CLUSTER)).
    ///
    /// # Errors
    ///
    /// The first unknown name.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::FaultKind;
    /// let kinds = FaultKind::parse_list_with("all", &FaultKind::CLUSTER).unwrap();
    /// assert_eq!(kinds, FaultKind::CLUSTER);
    /// ```
    pub fn parse_list_with(list: &str, all: &[FaultKind]) -> Result<Vec<FaultKind>, String> {
        let mut kinds = Vec::new();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if name == "all" {
                kinds.extend_from_slice(all);
            } else if name != "none" {
                kinds.push(name.parse()?);
            }
        }
        kinds.dedup();
        Ok(kinds)
    }
}

impl FromStr for FaultKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown fault {s:?} (kinds: {}, all, or none)",
                    names.join(", ")
                )
            })
    }
}
