//! What each fault does, and how it heals: one method per [`FaultKind`],
//! run on the nemesis's thread (cluster control blocks). A fault that lasts
//! waits out its length with [`nap`], which wakes early when the nemesis
//! stops, and always heals before returning: no node stays down, paused or
//! behind a faulty proxy past the run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;
use rand::rngs::StdRng;

use super::nemesis_config::NemesisConfig;
use crate::error::HarnessError;
use crate::faults::kind::FaultKind;
use crate::faults::net::Proxies;
use crate::faults::net::ProxyMode;
use crate::nodes::Cluster;

/// The shortest fault, and the floor of every random length.
pub(super) const SHORT: Duration = Duration::from_millis(50);

/// What one fault struck: its nodes (for a partition, the nodes cut off;
/// none for a client pause) and, for a client fault, the client group.
#[derive(Debug)]
pub(super) struct Hit {
    pub(super) targets: Vec<usize>,
    pub(super) group: Option<usize>,
    /// Nothing was there to strike (a client pause aimed at groups that
    /// have all finished): neither a fault nor an error.
    pub(super) skipped: bool,
    /// How long at most the fault held answers back (`script-flush`).
    pub(super) held_answers: Option<Duration>,
    /// The other nodes, a majority, whose replies a minority's script
    /// flush slowed meanwhile (logged as a `slow-majority` of its own).
    pub(super) slowed: Vec<usize>,
}

/// The nemesis's hands: what it strikes with, its randomness, and what it
/// must remember between faults.
#[derive(Debug)]
pub(super) struct Striker<'a> {
    cluster: &'a Cluster,
    proxies: &'a Proxies,
    config: &'a NemesisConfig,
    stop: &'a AtomicBool,
    /// Every choice the nemesis makes, from its seed.
    pub(super) rng: StdRng,
    /// The nodes that may be faulted (a partition cuts any subset of them).
    nodes: Vec<usize>,
    /// Clock shifts per node within the last `clock_window`: their sum stays
    /// within `max_clock_jump`, so no key outlives the drift budget.
    shifts: HashMap<usize, Vec<(Instant, Duration)>>,
    last_majority_restart: Option<Instant>,
}

impl<'a> Striker<'a> {
    pub(super) fn new(
        cluster: &'a Cluster,
        proxies: &'a Proxies,
        config: &'a NemesisConfig,
        stop: &'a AtomicBool,
        rng: StdRng,
        nodes: Vec<usize>,
    ) -> Self {
        Self {
            cluster,
            proxies,
            config,
            stop,
            rng,
            nodes,
            shifts: HashMap::new(),
            last_majority_restart: None,
        }
    }

    /// True when a majority restart came less than `majority_restart_every` ago.
    pub(super) fn restarted_a_majority_lately(&self) -> bool {
        self.last_majority_restart
            .is_some_and(|at| at.elapsed() < self.config.majority_restart_every)
    }

    /// Strikes `kind` on `hit`'s targets for `length` (a partition and a
    /// client pause choose their own targets and group), and heals it.
    pub(super) fn strike(
        &mut self,
        kind: FaultKind,
        hit: &mut Hit,
        length: Duration,
    ) -> Result<(), String> {
        let targets = &hit.targets;
        match kind {
            FaultKind::Kill => self.kill(targets),
            FaultKind::RestartMajority => self.restart_majority(targets),
            FaultKind::SlowMajority => self.slow_majority(targets, length),
            FaultKind::Pause => self.pause(targets, length),
            FaultKind::Latency => self.latency(targets, length),
            FaultKind::Stall => self.stall(targets, length),
            FaultKind::Reset => self.reset(targets),
            FaultKind::Clock => self.clock(targets),
            FaultKind::Partition => self.partition(hit, length),
            FaultKind::ScriptFlush => {
                hit.slowed = self.slowed_beside_flush(targets);
                let flushed = self.script_flush(targets, &hit.slowed, length);
                hit.held_answers = Some(self.answers_held(targets));
                flushed
            }
            FaultKind::Strobe => self.strobe(targets, length),
            FaultKind::ClientPause => self.client_pause(hit),
            FaultKind::FenceLoss => {
                let fences = format!("{}:fence", self.config.key_pattern);
                self.forget(targets, &fences)
            }
            FaultKind::Forget => self.forget(targets, &self.config.key_pattern),
            // Filtered out up front (`rounds.rs`): they need cluster masters.
            FaultKind::Migrate | FaultKind::Failover | FaultKind::LaggingFailover => {
                Err("needs cluster masters".to_owned())
            }
        }
    }

    /// `kill -9`, down for a random time, restarted.
    fn kill(&mut self, targets: &[usize]) -> Result<(), String> {
        let config = self.config;
        let down = self.rng.gen_range(
            config.min_restart_delay..=config.max_restart_delay.max(config.min_restart_delay),
        );
        self.kill_and_restart(targets, down)
    }

    /// A majority killed and restarted, at most once every `majority_restart_every`.
    fn restart_majority(&mut self, targets: &[usize]) -> Result<(), String> {
        self.last_majority_restart = Some(Instant::now());
        let down = self
            .rng
            .gen_range(Duration::ZERO..=self.config.max_restart_delay);
        self.kill_and_restart(targets, down)
    }

    fn kill_and_restart(&self, targets: &[usize], down: Duration) -> Result<(), String> {
        let killed: Result<(), _> = targets.iter().try_for_each(|&n| self.cluster.kill(n));
        std::thread::sleep(down);
        // Restart every target, even after an error, and retry: no
        // node may stay down past the run.
        let restarted: Vec<_> = targets.iter().map(|&n| restart(self.cluster, n)).collect();
        killed
            .and(restarted.into_iter().collect::<Result<(), _>>())
            .map_err(|e| e.to_string())
    }

    /// A majority's replies held below the node timeout.
    fn slow_majority(&mut self, targets: &[usize], length: Duration) -> Result<(), String> {
        let most = self.config.majority_latency.max(Duration::from_millis(5));
        for &n in targets {
            let delay = self.rng.gen_range(most / 5..=most);
            self.proxies.get(n).set_mode(ProxyMode::SlowReplies(delay));
        }
        self.hold(targets, length);
        Ok(())
    }

    /// SIGSTOP, then SIGCONT.
    fn pause(&self, targets: &[usize], length: Duration) -> Result<(), String> {
        let paused: Result<(), _> = targets.iter().try_for_each(|&n| self.cluster.pause(n));
        nap(length, self.stop);
        // Always resume, even when stopping: a frozen node must not outlive the run.
        for &n in targets {
            let _ = self.cluster.resume(n);
        }
        paused.map_err(|e| e.to_string())
    }

    /// Added latency on the nodes' proxies.
    fn latency(&mut self, targets: &[usize], length: Duration) -> Result<(), String> {
        let delay = self
            .rng
            .gen_range(Duration::from_millis(10)..=self.config.max_latency.max(SHORT));
        for &n in targets {
            self.proxies.get(n).set_latency(delay);
        }
        self.hold(targets, length);
        Ok(())
    }

    /// The proxies hold every byte, then deliver them.
    fn stall(&self, targets: &[usize], length: Duration) -> Result<(), String> {
        for &n in targets {
            self.proxies.get(n).stall();
        }
        self.hold(targets, length);
        Ok(())
    }

    /// Waits out a proxy fault, then heals the targets' proxies.
    fn hold(&self, targets: &[usize], length: Duration) {
        nap(length, self.stop);
        for &n in targets {
            self.proxies.get(n).heal();
        }
    }

    /// A storm of 1 to 5 connection resets, 30 ms apart.
    fn reset(&mut self, targets: &[usize]) -> Result<(), String> {
        for _ in 0..self.rng.gen_range(1..=5) {
            for &n in targets {
                self.proxies.get(n).reset();
            }
            if !nap(Duration::from_millis(30), self.stop) {
                break;
            }
        }
        Ok(())
    }

    /// A forward jump of the targets' clocks (a TTL shift), within what is
    /// left of their clock budget.
    fn clock(&mut self, targets: &[usize]) -> Result<(), String> {
        let room = targets
            .iter()
            .map(|&n| self.budget(n))
            .min()
            .unwrap_or_default();
        let jump = self.rng.gen_range(Duration::ZERO..=room);
        let result = targets
            .iter()
            .try_for_each(|&n| {
                self.cluster
                    .clock_jump(n, jump, &self.config.key_pattern)
                    .map(drop)
            })
            .map_err(|e| e.to_string());
        for &n in targets {
            self.shifts
                .entry(n)
                .or_default()
                .push((Instant::now(), jump));
        }
        result
    }

    /// What is left of `node`'s clock budget in the current window.
    fn budget(&mut self, node: usize) -> Duration {
        let window = self.config.clock_window;
        let list = self.shifts.entry(node).or_default();
        list.retain(|(at, _)| at.elapsed() < window);
        self.config
            .max_clock_jump
            .saturating_sub(list.iter().map(|(_, d)| *d).sum())
    }

    /// One client group cut off from any subset of the nodes, even all (a
    /// cut-off client is within the assumptions).
    fn partition(&mut self, hit: &mut Hit, length: Duration) -> Result<(), String> {
        let g = self.rng.gen_range(0..self.proxies.groups());
        hit.group = Some(g);
        let nodes = &self.nodes;
        let cut = self.rng.gen_range(1..=nodes.len());
        hit.targets = rand::seq::index::sample(&mut self.rng, nodes.len(), cut)
            .into_iter()
            .map(|i| nodes[i])
            .collect();
        hit.targets.sort_unstable();
        // Refused (connections reset) or a black hole (bytes held, delivered on heal).
        let mode = if self.rng.gen_bool(0.5) {
            ProxyMode::Refuse
        } else {
            ProxyMode::Stall
        };
        for &n in &hit.targets {
            self.proxies.group(g, n).set_mode(mode);
        }
        nap(length, self.stop);
        for &n in &hit.targets {
            self.proxies.group(g, n).heal();
        }
        Ok(())
    }

    /// Controlled clocks jumping forward by up to the drift budget and back.
    fn strobe(&mut self, targets: &[usize], length: Duration) -> Result<(), String> {
        // Forward by up to the drift budget and back, every 5–30 ms:
        // a key never expires more than one step early.
        let step = self.rng.gen_range(
            Duration::from_millis(1)..=self.config.max_strobe.max(Duration::from_millis(1)),
        );
        let until = Instant::now() + length;
        let mut forward = true;
        let mut result = Ok(());
        while Instant::now() < until && !self.stop.load(Ordering::SeqCst) && result.is_ok() {
            let offset = if forward { step.as_millis() as i64 } else { 0 };
            result = targets
                .iter()
                .try_for_each(|&n| self.cluster.set_clock_offset(n, offset));
            forward = !forward;
            std::thread::sleep(Duration::from_millis(self.rng.gen_range(5..=30)));
        }
        for &n in targets {
            let _ = self.cluster.set_clock_offset(n, 0);
            // Keys that expired early during the strobe stay gone.
            self.shifts
                .entry(n)
                .or_default()
                .push((Instant::now(), step));
        }
        result.map_err(|e| e.to_string())
    }

    /// One client group's runtime frozen, then resumed.
    fn client_pause(&mut self, hit: &mut Hit) -> Result<(), String> {
        hit.targets = Vec::new();
        let Some(pauser) = self.config.clients.as_ref() else {
            return Err("no client groups to pause".to_owned());
        };
        // Groups end one by one at the end of a run: a pause
        // aimed at none still running strikes nothing, and is
        // skipped (not a fault, not an error).
        let running = pauser.running();
        let longest = self.config.max_client_pause.max(SHORT);
        let pause = self.rng.gen_range(longest / 10..=longest);
        let chosen = running.get(self.rng.gen_range(0..running.len().max(1)));
        match chosen {
            Some(&g) if pauser.pause(g, pause) => {
                hit.group = Some(g);
                // The group sleeps on its own thread; wait it out here.
                std::thread::sleep(pause);
            }
            _ => hit.skipped = true,
        }
        Ok(())
    }

    /// Every key matching `pattern` deleted on the targets.
    fn forget(&self, targets: &[usize], pattern: &str) -> Result<(), String> {
        targets
            .iter()
            .try_for_each(|&n| self.cluster.forget_keys(n, pattern).map(drop))
            .map_err(|e| e.to_string())
    }
}

/// Sleeps up to `duration`, waking early when stopped. Returns false if stopped.
pub(super) fn nap(duration: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + duration;
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(10)));
    }
    !stop.load(Ordering::SeqCst)
}

/// Restarts node `index`, up to three times (a loaded machine can make a
/// start-up miss its deadline, or the old port linger).
fn restart(cluster: &Cluster, index: usize) -> Result<(), HarnessError> {
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

#[path = "strike_flush.rs"]
mod flush;
