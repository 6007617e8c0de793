//! The nemesis: random faults, one at a time, on a random minority of nodes
//! or on one client group, healed before the next, on a thread of its own
//! (cluster control is blocking). Each fault is logged with its targets and
//! its start and end on the history's clock.
//!
//! The [`FaultKind::SAFE`] kinds stay within Redlock's assumptions (a
//! minority misbehaves, clocks jump within the drift budget, a killed node
//! keeps its keys through persistence or a restart delay, a client is cut
//! off), so any violation found under them is a bug in the lock, not in the
//! experiment. `client-pause` breaks the holder's side of the contract (only
//! fencing protects the data then) and `forget` the nodes' side: they exist
//! to show the checker catching what they cause.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use super::client_group::ClientPauser;
use super::fault_log::{FaultEvent, FaultLog};
use super::kind::FaultKind;
use super::proxy::{Proxies, ProxyMode};
use crate::nodes::Cluster;

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
    /// Each fault hits at least this many nodes. Default: 1.
    pub min_nodes: usize,
    /// How long a fault lasts, at most (uniform from 50 ms). Default: 1 s.
    pub max_fault: Duration,
    /// Quiet time between faults, at most (uniform from `min_gap`). Default: 300 ms.
    pub max_gap: Duration,
    /// Quiet time between faults, at least. Default: 0.
    pub min_gap: Duration,
    /// A paused client group stays frozen this long, at most (uniform from a
    /// tenth of it). Default: 1 s.
    pub max_client_pause: Duration,
    /// The client groups a client fault can hit (pauses need the groups to
    /// run on their own runtimes, see `run_workload_groups`). Default: none.
    pub clients: Option<ClientPauser>,
    /// Largest forward step of a strobing clock: keep it within the drift
    /// budget. Default: 20 ms.
    pub max_strobe: Duration,
    /// The history's epoch, for the fault log's times. Default: the nemesis's start.
    pub epoch: Option<Instant>,
    /// A killed node stays down this long, at most. Default: 500 ms. Without
    /// persistence, use at least the max TTL (and set `min_restart_delay`).
    pub max_restart_delay: Duration,
    /// A killed node stays down at least this long. Default: 0.
    pub min_restart_delay: Duration,
    /// Largest clock shift of one node within any `clock_window` (jumps and
    /// strobe steps added up): keep it within the lock's drift budget. Default: 20 ms.
    pub max_clock_jump: Duration,
    /// The window the clock budget is counted over: the lock TTL (a key
    /// must not live through more than the budget). Default: 2 s.
    pub clock_window: Duration,
    /// Added latency, at most (uniform from 10 ms). Default: 300 ms.
    pub max_latency: Duration,
    /// The nodes the clock and strobe faults may shift (empty: every
    /// node): nodes whose clock already runs fast use their drift budget
    /// up. Default: empty.
    pub clock_nodes: Vec<usize>,
    /// Lock keys the clock jump shifts. Default: `lock:*`.
    pub key_pattern: String,
    /// The latency of a slow majority, at most (uniform from a fifth of
    /// it): keep it below the lock's node timeout. Default: 80 ms.
    pub majority_latency: Duration,
    /// A majority restart comes at most this often (the restarted nodes
    /// refuse their votes for the max TTL). Default: 10 s.
    pub majority_restart_every: Duration,
    /// Random seed. Default: 7.
    pub seed: u64,
}

impl Default for NemesisConfig {
    fn default() -> Self {
        Self {
            kinds: FaultKind::ALL.to_vec(),
            nodes: Vec::new(),
            max_nodes: 1,
            min_nodes: 1,
            max_fault: Duration::from_secs(1),
            max_gap: Duration::from_millis(300),
            min_gap: Duration::ZERO,
            max_client_pause: Duration::from_secs(1),
            clients: None,
            max_strobe: Duration::from_millis(20),
            epoch: None,
            max_restart_delay: Duration::from_millis(500),
            min_restart_delay: Duration::ZERO,
            max_clock_jump: Duration::from_millis(20),
            clock_window: Duration::from_secs(2),
            max_latency: Duration::from_millis(300),
            clock_nodes: Vec::new(),
            key_pattern: "lock:*".into(),
            majority_latency: Duration::from_millis(80),
            majority_restart_every: Duration::from_secs(10),
            seed: 7,
        }
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
    let epoch = config.epoch.unwrap_or_else(Instant::now);
    let mut log = FaultLog::default();
    let clock_ok = |n: &usize| config.clock_nodes.is_empty() || config.clock_nodes.contains(n);
    let strobing: Vec<usize> = (0..cluster.len())
        .filter(|&n| cluster.has_controlled_clock(n) && clock_ok(&n))
        .collect();
    let kinds: Vec<FaultKind> = config
        .kinds
        .iter()
        .copied()
        .filter(|k| !(cluster.is_external() && k.needs_process()))
        .filter(|k| *k != FaultKind::Strobe || !strobing.is_empty())
        .filter(|k| *k != FaultKind::ClientPause || config.clients.is_some())
        .collect();
    for kind in config.kinds.iter().filter(|k| !kinds.contains(k)) {
        log.errors.push(format!(
            "{} skipped: {}",
            kind.name(),
            match kind {
                FaultKind::Strobe => "no node has a controlled clock (libfaketime)",
                FaultKind::ClientPause => "clients do not run in pausable groups",
                _ => "external nodes (no process control)",
            }
        ));
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
    // Clock shifts per node within the last `clock_window`: their sum stays
    // within `max_clock_jump`, so no key outlives the drift budget.
    let mut shifts: std::collections::HashMap<usize, Vec<(Instant, Duration)>> =
        std::collections::HashMap::new();
    let budget = |shifts: &mut std::collections::HashMap<usize, Vec<(Instant, Duration)>>,
                  node: usize|
     -> Duration {
        let list = shifts.entry(node).or_default();
        list.retain(|(at, _)| at.elapsed() < config.clock_window);
        config
            .max_clock_jump
            .saturating_sub(list.iter().map(|(_, d)| *d).sum())
    };
    let gap = || config.min_gap..=config.max_gap.max(config.min_gap);
    let mut last_majority_restart: Option<Instant> = None;
    while nap(rng.gen_range(gap()), stop) {
        let kind = kinds[rng.gen_range(0..kinds.len())];
        if kind == FaultKind::RestartMajority
            && last_majority_restart.is_some_and(|at| at.elapsed() < config.majority_restart_every)
        {
            continue;
        }
        // A random set of 1..=max_nodes distinct nodes (a minority when max_nodes ≤ N/2).
        let clocks: Vec<usize> = nodes.iter().copied().filter(clock_ok).collect();
        let pool = match kind {
            FaultKind::Strobe => &strobing,
            FaultKind::Clock if !clocks.is_empty() => &clocks,
            _ => &nodes,
        };
        let most = config.max_nodes.clamp(1, pool.len());
        let count = if matches!(kind, FaultKind::SlowMajority | FaultKind::RestartMajority) {
            pool.len() / 2 + 1
        } else if kind == FaultKind::FenceLoss {
            rng.gen_range(pool.len() / 2 + 1..=pool.len())
        } else {
            rng.gen_range(config.min_nodes.clamp(1, most)..=most)
        };
        let mut targets: Vec<usize> = rand::seq::index::sample(&mut rng, pool.len(), count)
            .into_iter()
            .map(|i| pool[i])
            .collect();
        targets.sort_unstable();
        let length = rng.gen_range(short..=config.max_fault.max(short));
        let started = epoch.elapsed();
        let mut group = None;
        let mut skipped = false;
        let result = match kind {
            FaultKind::Kill => {
                let down = rng.gen_range(
                    config.min_restart_delay
                        ..=config.max_restart_delay.max(config.min_restart_delay),
                );
                let killed: Result<(), _> = targets.iter().try_for_each(|&n| cluster.kill(n));
                std::thread::sleep(down);
                // Restart every target, even after an error, and retry: no
                // node may stay down past the run.
                let restarted: Vec<_> = targets.iter().map(|&n| restart(cluster, n)).collect();
                killed
                    .and(restarted.into_iter().collect::<Result<(), _>>())
                    .map_err(|e| e.to_string())
            }
            FaultKind::RestartMajority => {
                last_majority_restart = Some(Instant::now());
                let killed: Result<(), _> = targets.iter().try_for_each(|&n| cluster.kill(n));
                std::thread::sleep(rng.gen_range(Duration::ZERO..=config.max_restart_delay));
                let restarted: Vec<_> = targets.iter().map(|&n| restart(cluster, n)).collect();
                killed
                    .and(restarted.into_iter().collect::<Result<(), _>>())
                    .map_err(|e| e.to_string())
            }
            FaultKind::SlowMajority => {
                let most = config.majority_latency.max(Duration::from_millis(5));
                for &n in &targets {
                    let delay = rng.gen_range(most / 5..=most);
                    proxies.get(n).set_mode(ProxyMode::SlowReplies(delay));
                }
                nap(length, stop);
                for &n in &targets {
                    proxies.get(n).heal();
                }
                Ok(())
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
                let room = targets
                    .iter()
                    .map(|&n| budget(&mut shifts, n))
                    .min()
                    .unwrap_or_default();
                let jump = rng.gen_range(Duration::ZERO..=room);
                let result = targets
                    .iter()
                    .try_for_each(|&n| cluster.clock_jump(n, jump, &config.key_pattern).map(drop))
                    .map_err(|e| e.to_string());
                for &n in &targets {
                    shifts.entry(n).or_default().push((Instant::now(), jump));
                }
                result
            }
            FaultKind::Partition => {
                // Any subset of the nodes, even all: a cut-off client is within the assumptions.
                let g = rng.gen_range(0..proxies.groups());
                group = Some(g);
                let cut = rng.gen_range(1..=nodes.len());
                targets = rand::seq::index::sample(&mut rng, nodes.len(), cut)
                    .into_iter()
                    .map(|i| nodes[i])
                    .collect();
                targets.sort_unstable();
                // Refused (connections reset) or a black hole (bytes held, delivered on heal).
                let mode = if rng.gen_bool(0.5) {
                    ProxyMode::Refuse
                } else {
                    ProxyMode::Stall
                };
                for &n in &targets {
                    proxies.group(g, n).set_mode(mode);
                }
                nap(length, stop);
                for &n in &targets {
                    proxies.group(g, n).heal();
                }
                Ok(())
            }
            FaultKind::ScriptFlush => {
                // A storm, not one flush: a NOSCRIPT resend that lands after
                // the caller's unwind needs another call to have reloaded the
                // script in between, which one flush rarely gives.
                let until = Instant::now() + length;
                let mut result = Ok(());
                loop {
                    result = result.and(targets.iter().try_for_each(|&n| cluster.flush_scripts(n)));
                    let gap = Duration::from_millis(rng.gen_range(0..=100));
                    if result.is_err() || Instant::now() + gap >= until || !nap(gap, stop) {
                        break;
                    }
                }
                result.map_err(|e| e.to_string())
            }
            FaultKind::Strobe => {
                // Forward by up to the drift budget and back, every 5–30 ms:
                // a key never expires more than one step early.
                let step = rng.gen_range(
                    Duration::from_millis(1)..=config.max_strobe.max(Duration::from_millis(1)),
                );
                let until = Instant::now() + length;
                let mut forward = true;
                let mut result = Ok(());
                while Instant::now() < until && !stop.load(Ordering::SeqCst) && result.is_ok() {
                    let offset = if forward { step.as_millis() as i64 } else { 0 };
                    result = targets
                        .iter()
                        .try_for_each(|&n| cluster.set_clock_offset(n, offset));
                    forward = !forward;
                    std::thread::sleep(Duration::from_millis(rng.gen_range(5..=30)));
                }
                for &n in &targets {
                    let _ = cluster.set_clock_offset(n, 0);
                    // Keys that expired early during the strobe stay gone.
                    shifts.entry(n).or_default().push((Instant::now(), step));
                }
                result.map_err(|e| e.to_string())
            }
            FaultKind::ClientPause => {
                targets = Vec::new();
                match config.clients.as_ref() {
                    None => Err("no client groups to pause".to_owned()),
                    Some(pauser) => {
                        // Groups end one by one at the end of a run: a pause
                        // aimed at none still running strikes nothing, and is
                        // skipped (not a fault, not an error).
                        let running = pauser.running();
                        let longest = config.max_client_pause.max(short);
                        let pause = rng.gen_range(longest / 10..=longest);
                        let chosen = running.get(rng.gen_range(0..running.len().max(1)));
                        match chosen {
                            Some(&g) if pauser.pause(g, pause) => {
                                group = Some(g);
                                // The group sleeps on its own thread; wait it out here.
                                std::thread::sleep(pause);
                                Ok(())
                            }
                            _ => {
                                skipped = true;
                                Ok(())
                            }
                        }
                    }
                }
            }
            FaultKind::FenceLoss => {
                let fences = format!("{}:fence", config.key_pattern);
                targets
                    .iter()
                    .try_for_each(|&n| cluster.forget_keys(n, &fences).map(drop))
                    .map_err(|e| e.to_string())
            }
            FaultKind::Forget => targets
                .iter()
                .try_for_each(|&n| cluster.forget_keys(n, &config.key_pattern).map(drop))
                .map_err(|e| e.to_string()),
        };
        match result {
            Ok(()) if skipped => {}
            Ok(()) => {
                let mut event = FaultEvent::new(kind, targets, started, epoch.elapsed());
                event.group = group;
                log.record(event);
            }
            Err(e) => log
                .errors
                .push(format!("{} on nodes {targets:?}: {e}", kind.name())),
        }
    }
    proxies.heal_all();
    log
}

/// Restarts node `index`, up to three times (a loaded machine can make a
/// start-up miss its deadline, or the old port linger).
fn restart(cluster: &Cluster, index: usize) -> Result<(), crate::HarnessError> {
    let mut result = cluster.restart(index);
    for _ in 0..2 {
        if result.is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
        result = cluster.restart(index);
    }
    result
}
