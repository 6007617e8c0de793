//! `WorkloadConfig`: what the workload does: how many clients on which
//! resources for how long, the holder mix, the write margin, fencing, and
//! how often futures are dropped part-way.

use std::time::Duration;

use crate::evidence::Holder;

/// What the workload does.
///
/// # Examples
///
/// ```
/// let config = redquorum_harness::WorkloadConfig { clients: 4, ..Default::default() };
/// assert_eq!(config.resources.len(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct WorkloadConfig {
    /// Concurrent clients. Default: 8.
    pub clients: usize,
    /// Resource names. Default: `["r0", "r1"]`.
    pub resources: Vec<String>,
    /// How long clients keep starting sessions. Default: 3 s.
    pub duration: Duration,
    /// Hold time range of a brief holder (uniform). Default: 0–50 ms.
    pub hold: (Duration, Duration),
    /// An honest holder writes only with at least this much validity left. Default: 250 ms.
    pub write_margin: Duration,
    /// Pause after a failed acquire, at most (uniform from 0). Default: 20 ms.
    pub backoff: Duration,
    /// The holder mix: each session draws a kind with these weights. Default: brief only.
    pub holders: Vec<(Holder, u32)>,
    /// How far past its deadline a pausing holder sleeps. Default: 100 ms.
    pub pause_past_validity: Duration,
    /// Holders check their deadline before writing (honest). Off: every
    /// holder writes whatever its lease says, as the clients in Jepsen's
    /// lock tests do. Default: on.
    pub check_before_write: bool,
    /// Reads and writes carry the fencing token (when the lock has one),
    /// and the store refuses tokens below the highest it has seen. Default: off.
    pub fenced_store: bool,
    /// The chance that an acquire or a release is dropped part-way
    /// (raced against a random timer up to `drop_within`). Default: 0.
    pub drop_chance: f64,
    /// The longest such timer. Default: 50 ms.
    pub drop_within: Duration,
    /// The chance that a brief holder's acquire (a request with a deadline,
    /// not a long job) is given up after a timeout of its caller's own
    /// (`tokio::time::timeout` around a waiting acquire), drawn from
    /// `give_up_after`: the acquire is dropped in whichever attempt is out
    /// then. Default: 0.
    pub give_up_chance: f64,
    /// That timeout's range (uniform). Default: 50–500 ms.
    pub give_up_after: (Duration, Duration),
    /// The chance that a session locks its client's own name
    /// ([`WorkloadConfig::own_name`]), which no other client locks: an
    /// uncontended hold, as a service locking per-entity names takes many
    /// at once on one connection (batched with its other operations).
    /// Default: 0.
    pub own_name_chance: f64,
    /// The chance that a holder, done with its hold, hands it over as a
    /// lease ticket ([`Locker::hand_over`](crate::Locker::hand_over))
    /// instead of releasing it, where the lock can: two tasks of its client
    /// then adopt the ticket at once, and the one granted uses and releases
    /// it. Default: 0.
    pub hand_over_chance: f64,
    /// Random seed (clients use `seed + index`). Default: 1.
    pub seed: u64,
}

impl WorkloadConfig {
    /// The name of `client`'s own: `own<client>`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::WorkloadConfig::own_name(3), "own3");
    /// ```
    #[must_use]
    pub fn own_name(client: usize) -> String {
        format!("own{client}")
    }

    /// Every name a session may lock: the shared resources, then each
    /// client's own when sessions may draw it.
    ///
    /// # Examples
    ///
    /// ```
    /// let config = redquorum_harness::WorkloadConfig { clients: 2, own_name_chance: 0.5, ..Default::default() };
    /// assert_eq!(config.names(), ["r0", "r1", "own0", "own1"]);
    /// ```
    #[must_use]
    pub fn names(&self) -> Vec<String> {
        let own = (self.own_name_chance > 0.0).then_some(0..self.clients);
        let own = own.into_iter().flatten().map(Self::own_name);
        self.resources.iter().cloned().chain(own).collect()
    }
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        Self {
            clients: 8,
            resources: vec!["r0".into(), "r1".into()],
            duration: Duration::from_secs(3),
            hold: (Duration::ZERO, Duration::from_millis(50)),
            write_margin: Duration::from_millis(250),
            backoff: Duration::from_millis(20),
            holders: vec![(Holder::Brief, 1)],
            pause_past_validity: Duration::from_millis(100),
            check_before_write: true,
            fenced_store: false,
            drop_chance: 0.0,
            drop_within: Duration::from_millis(50),
            give_up_chance: 0.0,
            give_up_after: (Duration::from_millis(50), Duration::from_millis(500)),
            own_name_chance: 0.0,
            hand_over_chance: 0.0,
            seed: 1,
        }
    }
}
