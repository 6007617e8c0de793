//! The nemesis: random faults, one kind at a time, on a random minority of
//! nodes, healed before the next, on a thread of its own (cluster control is
//! blocking).
//!
//! Every fault stays within Redlock's assumptions (a minority misbehaves,
//! clocks jump within the drift budget, a killed node keeps its keys through
//! persistence or a restart delay), so any violation found under the nemesis
//! is a bug in the lock, not in the experiment.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use crate::cluster::Cluster;
use crate::proxy::Proxies;

/// A kind of fault the nemesis injects.
///
/// # Examples
///
/// ```
/// use redquorum_harness::FaultKind;
/// assert_eq!("kill".parse::<FaultKind>(), Ok(FaultKind::Kill));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum FaultKind {
    /// `kill -9`, down for a random time up to the restart delay, restart.
    Kill,
    /// SIGSTOP, then SIGCONT.
    Pause,
    /// Added latency on the node's proxy, sometimes above the node timeout.
    Latency,
    /// The proxy holds all bytes, then delivers them (late writes).
    Stall,
    /// A storm of connection resets on the proxy.
    Reset,
    /// The node's clock jumps forward, within the drift budget.
    Clock,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 6] = [
        FaultKind::Kill,
        FaultKind::Pause,
        FaultKind::Latency,
        FaultKind::Stall,
        FaultKind::Reset,
        FaultKind::Clock,
    ];

    /// The lower-case name, as `--nemesis` takes it.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::FaultKind::Stall.name(), "stall");
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
        matches!(self, FaultKind::Kill | FaultKind::Pause)
    }

    /// Parses `all` or a comma list such as `kill,pause,latency`.
    ///
    /// # Errors
    ///
    /// The first unknown name.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::FaultKind;
    /// assert_eq!(FaultKind::parse_list("all").unwrap().len(), 6);
    /// assert_eq!(FaultKind::parse_list("kill, stall").unwrap(), vec![FaultKind::Kill, FaultKind::Stall]);
    /// assert!(FaultKind::parse_list("flood").is_err());
    /// ```
    pub fn parse_list(list: &str) -> Result<Vec<FaultKind>, String> {
        if list.trim() == "all" {
            return Ok(Self::ALL.to_vec());
        }
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::parse)
            .collect()
    }
}

impl FromStr for FaultKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown fault {s:?} (kinds: kill, pause, latency, stall, reset, clock, or all)"
                )
            })
    }
}

/// What the nemesis does and how hard.
///
/// # Examples
///
/// ```
/// use redquorum_harness::{FaultKind, NemesisConfig};
/// let config = NemesisConfig { kinds: vec![FaultKind::Stall], ..NemesisConfig::default() };
/// assert_eq!(config.kinds.len(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct NemesisConfig {
    /// The kinds to choose from, uniformly. Default: all.
    pub kinds: Vec<FaultKind>,
    /// Nodes that may be faulted. Default: empty = every node.
    pub nodes: Vec<usize>,
    /// Each fault hits a random set of 1 to this many nodes at once. Keep it
    /// a minority (≤ N/2) to stay within the assumptions. Default: 1.
    pub max_nodes: usize,
    /// How long a fault lasts, at most (uniform from 50 ms). Default: 1 s.
    pub max_fault: Duration,
    /// Quiet time between faults, at most (uniform from 0). Default: 300 ms.
    pub max_gap: Duration,
    /// A killed node stays down this long, at most. Default: 500 ms. Without
    /// persistence, use at least the max TTL (and set `min_restart_delay`).
    pub max_restart_delay: Duration,
    /// A killed node stays down at least this long. Default: 0.
    pub min_restart_delay: Duration,
    /// Largest clock jump: keep it within the lock's drift budget. Default: 20 ms.
    pub max_clock_jump: Duration,
    /// Added latency, at most (uniform from 10 ms). Default: 300 ms.
    pub max_latency: Duration,
    /// Lock keys the clock jump shifts. Default: `lock:*`.
    pub key_pattern: String,
    /// Random seed. Default: 7.
    pub seed: u64,
}

impl Default for NemesisConfig {
    fn default() -> Self {
        Self {
            kinds: FaultKind::ALL.to_vec(),
            nodes: Vec::new(),
            max_nodes: 1,
            max_fault: Duration::from_secs(1),
            max_gap: Duration::from_millis(300),
            max_restart_delay: Duration::from_millis(500),
            min_restart_delay: Duration::ZERO,
            max_clock_jump: Duration::from_millis(20),
            max_latency: Duration::from_millis(300),
            key_pattern: "lock:*".into(),
            seed: 7,
        }
    }
}

/// What the nemesis did.
///
/// # Examples
///
/// ```
/// let log = redquorum_harness::FaultLog::default();
/// assert_eq!(log.total(), 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultLog {
    /// Faults injected, by kind.
    pub injected: BTreeMap<FaultKind, u64>,
    /// Faults that could not be injected or healed, with why.
    pub errors: Vec<String>,
}

impl FaultLog {
    /// Faults injected in all.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::FaultLog::default().total(), 0);
    /// ```
    #[must_use]
    pub fn total(&self) -> u64 {
        self.injected.values().sum()
    }
}

/// A running nemesis; [`stop`](Self::stop) heals and returns the log. Dropping
/// it also stops it (and heals).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use redquorum_harness::{Cluster, FaultKind, Nemesis, NemesisConfig, Proxies};
///
/// let cluster = Arc::new(Cluster::start(3).unwrap());
/// let proxies = Arc::new(Proxies::start(&cluster).unwrap());
/// let config = NemesisConfig { kinds: vec![FaultKind::Reset], ..Default::default() };
/// let nemesis = Nemesis::start(cluster.clone(), proxies, config);
/// std::thread::sleep(std::time::Duration::from_millis(400));
/// let log = nemesis.stop();
/// assert!(log.injected.get(&FaultKind::Reset).copied().unwrap_or(0) >= 1);
/// ```
#[derive(Debug)]
pub struct Nemesis {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<FaultLog>>,
}

impl Nemesis {
    /// Starts injecting faults on `cluster` (process faults) and `proxies` (network faults).
    ///
    /// Process faults on external nodes are skipped and logged as errors.
    ///
    /// # Examples
    ///
    /// See [`Nemesis`].
    #[must_use]
    pub fn start(cluster: Arc<Cluster>, proxies: Arc<Proxies>, config: NemesisConfig) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("nemesis".into())
            .spawn(move || run(&cluster, &proxies, &config, &flag))
            .ok();
        Self { stop, thread }
    }

    /// Stops after the current fault, heals it, and returns what was done.
    ///
    /// # Examples
    ///
    /// See [`Nemesis`].
    #[must_use]
    pub fn stop(mut self) -> FaultLog {
        self.finish()
    }

    fn finish(&mut self) -> FaultLog {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Nemesis {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Sleeps up to `duration`, waking early when stopped. Returns false if stopped.
fn nap(duration: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + duration;
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(10)));
    }
    !stop.load(Ordering::SeqCst)
}

fn run(
    cluster: &Cluster,
    proxies: &Proxies,
    config: &NemesisConfig,
    stop: &AtomicBool,
) -> FaultLog {
    let mut rng = rand::rngs::StdRng::seed_from_u64(config.seed);
    let mut log = FaultLog::default();
    let kinds: Vec<FaultKind> = config
        .kinds
        .iter()
        .copied()
        .filter(|k| !(cluster.is_external() && k.needs_process()))
        .collect();
    if kinds.len() < config.kinds.len() {
        log.errors
            .push("external nodes: kill and pause skipped (no process control)".into());
    }
    let nodes: Vec<usize> = if config.nodes.is_empty() {
        (0..cluster.len()).collect()
    } else {
        config.nodes.clone()
    };
    if kinds.is_empty() || nodes.is_empty() {
        return log;
    }
    let short = Duration::from_millis(50);
    while nap(rng.gen_range(Duration::ZERO..=config.max_gap), stop) {
        let kind = kinds[rng.gen_range(0..kinds.len())];
        // A random set of 1..=max_nodes distinct nodes (a minority when max_nodes ≤ N/2).
        let count = rng.gen_range(1..=config.max_nodes.clamp(1, nodes.len()));
        let targets: Vec<usize> = rand::seq::index::sample(&mut rng, nodes.len(), count)
            .into_iter()
            .map(|i| nodes[i])
            .collect();
        let length = rng.gen_range(short..=config.max_fault.max(short));
        let result = match kind {
            FaultKind::Kill => {
                let down = rng.gen_range(
                    config.min_restart_delay
                        ..=config.max_restart_delay.max(config.min_restart_delay),
                );
                let killed: Result<(), _> = targets.iter().try_for_each(|&n| cluster.kill(n));
                std::thread::sleep(down);
                // Restart every target, even after an error: no node stays down past the run.
                let restarted: Result<(), _> = targets.iter().try_for_each(|&n| cluster.restart(n));
                killed.and(restarted).map_err(|e| e.to_string())
            }
            FaultKind::Pause => {
                let paused: Result<(), _> = targets.iter().try_for_each(|&n| cluster.pause(n));
                nap(length, stop);
                // Always resume, even when stopping: a frozen node must not outlive the run.
                for &n in &targets {
                    let _ = cluster.resume(n);
                }
                paused.map_err(|e| e.to_string())
            }
            FaultKind::Latency => {
                let delay =
                    rng.gen_range(Duration::from_millis(10)..=config.max_latency.max(short));
                for &n in &targets {
                    proxies.get(n).set_latency(delay);
                }
                nap(length, stop);
                for &n in &targets {
                    proxies.get(n).heal();
                }
                Ok(())
            }
            FaultKind::Stall => {
                for &n in &targets {
                    proxies.get(n).stall();
                }
                nap(length, stop);
                for &n in &targets {
                    proxies.get(n).heal();
                }
                Ok(())
            }
            FaultKind::Reset => {
                for _ in 0..rng.gen_range(1..=5) {
                    for &n in &targets {
                        proxies.get(n).reset();
                    }
                    if !nap(Duration::from_millis(30), stop) {
                        break;
                    }
                }
                Ok(())
            }
            FaultKind::Clock => {
                let jump = rng.gen_range(Duration::ZERO..=config.max_clock_jump);
                targets
                    .iter()
                    .try_for_each(|&n| cluster.clock_jump(n, jump, &config.key_pattern).map(drop))
                    .map_err(|e| e.to_string())
            }
        };
        match result {
            Ok(()) => *log.injected.entry(kind).or_default() += 1,
            Err(e) => log
                .errors
                .push(format!("{} on nodes {targets:?}: {e}", kind.name())),
        }
    }
    proxies.heal_all();
    log
}
