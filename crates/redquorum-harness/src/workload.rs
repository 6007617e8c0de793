//! The workload runner: K clients × M resources, each critical section a
//! read-modify-write of a protected counter kept in a separate Redis (so an
//! overlap loses an update), recorded into a [`History`].
//!
//! The runner is generic over [`Locker`] (`locker.rs`), so that this crate
//! does not depend on the lock library (which dev-depends on this crate for
//! its doc tests).

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use crate::checker::LeakedKey;
use crate::cluster::Cluster;
use crate::error::HarnessError;
use crate::history::{History, Outcome, Session};
use crate::locker::{Grant, Locker};
use crate::resp::RespConn;

/// The protected values: one counter per resource in a Redis the faults do not touch.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store_node = redquorum_harness::Cluster::start(1)?;
/// let store = redquorum_harness::ProtectedStore::new(&store_node.host_port(0));
/// store.write_blocking("r", 3)?;
/// assert_eq!(store.read_blocking("r")?, 3);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ProtectedStore {
    addr: String,
}

impl ProtectedStore {
    /// A store on the Redis at `host:port`.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = redquorum_harness::ProtectedStore::new("127.0.0.1:6379");
    /// ```
    #[must_use]
    pub fn new(addr: &str) -> Self {
        Self {
            addr: addr.to_owned(),
        }
    }

    fn key(resource: &str) -> String {
        format!("protected:{resource}")
    }

    fn conn(&self) -> io::Result<RespConn> {
        RespConn::connect_addr(&self.addr, Duration::from_secs(2))
    }

    /// Reads `resource`'s counter (0 when unset).
    ///
    /// # Errors
    ///
    /// I/O errors or a non-integer value.
    ///
    /// # Examples
    ///
    /// ```
    /// # let node = redquorum_harness::Cluster::start(1).unwrap();
    /// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
    /// assert_eq!(store.read_blocking("fresh").unwrap(), 0);
    /// ```
    pub fn read_blocking(&self, resource: &str) -> io::Result<i64> {
        let reply = self.conn()?.command(&["GET", &Self::key(resource)])?;
        match reply.as_text() {
            None => Ok(0),
            Some(text) => text
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, text)),
        }
    }

    /// Writes `resource`'s counter.
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # let node = redquorum_harness::Cluster::start(1).unwrap();
    /// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
    /// store.write_blocking("r", 1).unwrap();
    /// ```
    pub fn write_blocking(&self, resource: &str, value: i64) -> io::Result<()> {
        self.conn()?
            .command(&["SET", &Self::key(resource), &value.to_string()])
            .map(drop)
    }

    /// Every resource's counter.
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # let node = redquorum_harness::Cluster::start(1).unwrap();
    /// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
    /// let values = store.values(&["a".to_owned()]).unwrap();
    /// assert_eq!(values["a"], 0);
    /// ```
    pub fn values(&self, resources: &[String]) -> io::Result<BTreeMap<String, i64>> {
        resources
            .iter()
            .map(|r| Ok((r.clone(), self.read_blocking(r)?)))
            .collect()
    }

    async fn read(&self, resource: &str) -> io::Result<i64> {
        let (store, resource) = (self.clone(), resource.to_owned());
        tokio::task::spawn_blocking(move || store.read_blocking(&resource))
            .await
            .map_err(io::Error::other)?
    }

    async fn write(&self, resource: &str, value: i64) -> io::Result<()> {
        let (store, resource) = (self.clone(), resource.to_owned());
        tokio::task::spawn_blocking(move || store.write_blocking(&resource, value))
            .await
            .map_err(io::Error::other)?
    }
}

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
    /// Hold time range inside the critical section (uniform). Default: 0–50 ms.
    pub hold: (Duration, Duration),
    /// An honest holder writes only with at least this much validity left. Default: 250 ms.
    pub write_margin: Duration,
    /// Pause after a failed acquire, at most (uniform from 0). Default: 20 ms.
    pub backoff: Duration,
    /// When set, holders ignore their validity: each sleeps until this long
    /// *past* its deadline before writing (the GC-pause model). Default: none.
    pub pause_past_validity: Option<Duration>,
    /// Random seed (clients use `seed + index`). Default: 1.
    pub seed: u64,
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
            pause_past_validity: None,
            seed: 1,
        }
    }
}

/// Runs the workload to its end and returns the history.
///
/// # Cancel safety
///
/// Not cancel safe: dropping it abandons sessions mid-way (their keys expire).
///
/// # Examples
///
/// ```
/// # use std::time::{Duration, Instant};
/// # use redquorum_harness::{Grant, Locker, Refusal};
/// # struct Local;
/// # impl Locker for Local {
/// #     type Held = ();
/// #     async fn acquire(&self, _r: &str) -> Result<Grant<()>, Refusal> {
/// #         Ok(Grant::new((), "me".into(), Instant::now() + Duration::from_secs(60)))
/// #     }
/// #     async fn release(&self, _held: ()) -> Result<(), String> { Ok(()) }
/// # }
/// # #[tokio::main] async fn main() {
/// let node = redquorum_harness::Cluster::start(1).unwrap();
/// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
/// let config = redquorum_harness::WorkloadConfig {
///     clients: 1, duration: Duration::from_millis(100), ..Default::default()
/// };
/// let history = redquorum_harness::run_workload(std::sync::Arc::new(Local), store, &config).await;
/// assert!(!history.sessions().is_empty());
/// # }
/// ```
pub async fn run_workload<L: Locker>(
    locker: Arc<L>,
    store: ProtectedStore,
    config: &WorkloadConfig,
) -> History {
    run_workload_into(History::new(), locker, store, config).await
}

/// As [`run_workload`], recording into `history`, which the caller can
/// watch while the run goes on (progress lines).
///
/// # Cancel safety
///
/// Not cancel safe: dropping it abandons sessions mid-way (their keys expire).
///
/// # Examples
///
/// See [`run_workload`]; `history.len()` grows while it runs.
pub async fn run_workload_into<L: Locker>(
    history: History,
    locker: Arc<L>,
    store: ProtectedStore,
    config: &WorkloadConfig,
) -> History {
    let until = Instant::now() + config.duration;
    let tasks: Vec<_> = (0..config.clients)
        .map(|client| {
            let (locker, store, history, config) = (
                locker.clone(),
                store.clone(),
                history.clone(),
                config.clone(),
            );
            tokio::spawn(async move {
                client_loop(client, &*locker, &store, &history, &config, until).await;
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    history
}

async fn client_loop<L: Locker>(
    client: usize,
    locker: &L,
    store: &ProtectedStore,
    history: &History,
    config: &WorkloadConfig,
    until: Instant,
) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(config.seed.wrapping_add(client as u64));
    while Instant::now() < until && !config.resources.is_empty() {
        let resource = &config.resources[rng.gen_range(0..config.resources.len())];
        let start = history.now();
        match locker.acquire(resource).await {
            Err(refusal) => {
                history.record(Session::refused(client, resource, start, refusal.kind));
                let pause = rng.gen_range(Duration::ZERO..=config.backoff);
                tokio::time::sleep(pause).await;
            }
            Ok(grant) => {
                let hold = rng.gen_range(config.hold.0..=config.hold.1);
                let session = critical_section(
                    client, resource, start, grant, hold, locker, store, history, config,
                )
                .await;
                history.record(session);
            }
        }
    }
}

#[allow(clippy::too_many_arguments)] // one call site; a struct would only rename these
async fn critical_section<L: Locker>(
    client: usize,
    resource: &str,
    start: Duration,
    grant: Grant<L::Held>,
    hold: Duration,
    locker: &L,
    store: &ProtectedStore,
    history: &History,
    config: &WorkloadConfig,
) -> Session {
    let granted = history.now();
    let mut session = Session::granted(
        client,
        resource,
        &grant.owner,
        start,
        granted,
        history.at(grant.deadline),
    );
    session.fence = grant.fence;
    session.write_start = None;
    session.write_end = None;
    session.outcome = Outcome::Abandoned;
    if let Ok(value) = store.read(resource).await {
        tokio::time::sleep(hold).await;
        if let Some(past) = config.pause_past_validity {
            // The GC-pause model: the holder stops the world and resumes after its lease ended.
            tokio::time::sleep_until((grant.deadline + past).into()).await;
        }
        let honest_ok = Instant::now() + config.write_margin <= grant.deadline;
        if honest_ok || config.pause_past_validity.is_some() {
            session.write_start = Some(history.now());
            session.outcome = match store.write(resource, value + 1).await {
                Ok(()) => Outcome::Completed,
                Err(e) => Outcome::Indeterminate(e.to_string()),
            };
            session.write_end = Some(history.now());
        }
    }
    session.release = Some(history.now());
    // A failed release leaves the key to its TTL; the leak check covers it.
    let _ = locker.release(grant.held).await;
    session
}

/// Lock keys matching `pattern` still on any node, as leaks. Call it after the
/// run, every fault healed, and the max TTL waited out.
///
/// # Errors
///
/// A node that cannot be read.
///
/// # Examples
///
/// ```
/// let cluster = redquorum_harness::Cluster::start(1).unwrap();
/// cluster.command(0, &["SET", "lock:x", "o", "PX", "60000"]).unwrap();
/// let leaks = redquorum_harness::find_leaks(&cluster, "lock:*").unwrap();
/// assert_eq!(leaks.len(), 1);
/// ```
pub fn find_leaks(cluster: &Cluster, pattern: &str) -> Result<Vec<LeakedKey>, HarnessError> {
    let mut leaks = Vec::new();
    for index in 0..cluster.len() {
        for (key, pttl_ms) in cluster.keys(index, pattern)? {
            leaks.push(LeakedKey {
                node: cluster.host_port(index),
                key,
                pttl_ms,
            });
        }
    }
    Ok(leaks)
}

/// Lock keys matching `pattern` (fence counters, `*:fence`, excepted: they
/// outlive locks on purpose) that are still on a node after `within`.
///
/// Polls instead of sleeping a fixed time: it returns as soon as no lock key
/// is left, and a key still there at the deadline (no expiry, or set late
/// with a long one) is reported. Call it after the run with every fault
/// healed, with `within` a little above the largest TTL. Blocks the thread.
///
/// # Errors
///
/// A node that cannot be read.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let cluster = redquorum_harness::Cluster::start(1).unwrap();
/// cluster.command(0, &["SET", "lock:short", "o", "PX", "100"]).unwrap();
/// cluster.command(0, &["SET", "lock:forever", "o"]).unwrap();
/// let leaks = redquorum_harness::leaks_after(&cluster, "lock:*", Duration::from_secs(1)).unwrap();
/// assert_eq!(leaks.len(), 1);
/// assert_eq!(leaks[0].key, "lock:forever");
/// ```
pub fn leaks_after(
    cluster: &Cluster,
    pattern: &str,
    within: std::time::Duration,
) -> Result<Vec<LeakedKey>, HarnessError> {
    let deadline = std::time::Instant::now() + within;
    loop {
        let leaks: Vec<LeakedKey> = find_leaks(cluster, pattern)?
            .into_iter()
            .filter(|leak| !leak.key.ends_with(":fence"))
            .collect();
        if leaks.is_empty() || std::time::Instant::now() >= deadline {
            return Ok(leaks);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
