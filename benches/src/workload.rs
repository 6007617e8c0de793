//! The workloads (A sequential, B parallel, C contended, C2 ping-pong) and
//! what one run of them measured.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::fairness::Fairness;
use crate::stats::Latencies;
use redquorum_harness::Locker;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// A: one client, acquire + release on a fresh resource, one cycle at a time.
    Sequential,
    /// B: `tasks` concurrent clients, each on its own fresh resources.
    Parallel {
        /// Concurrent tasks.
        tasks: usize,
    },
    /// C: `workers` contend for one resource, each holding it for `hold`.
    Contended {
        /// Concurrent workers.
        workers: usize,
        /// How long each critical section lasts.
        hold: Duration,
    },
    /// C2: two workers take turns on one resource, each holding it for `hold`.
    PingPong {
        /// How long each critical section lasts.
        hold: Duration,
    },
}

impl Workload {
    /// A short name for tables: `sequential`, `parallel`, `contended`, `pingpong`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_benches::Workload::Sequential.name(), "sequential");
    /// ```
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Workload::Sequential => "sequential",
            Workload::Parallel { .. } => "parallel",
            Workload::Contended { .. } => "contended",
            Workload::PingPong { .. } => "pingpong",
        }
    }
}

/// What one run measured.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Completed acquire + release cycles (critical sections).
    pub cycles: u64,
    /// Failed acquires or releases (should be 0).
    pub errors: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Client CPU time used during the run (`None` if `getrusage` failed).
    pub cpu: Option<Duration>,
    /// Acquire latencies.
    pub acquire: Latencies,
    /// Release latencies.
    pub release: Latencies,
    /// From the start of a release to the next successful acquire
    /// (contended and ping-pong only).
    pub handoff: Latencies,
    /// The first error seen, if any.
    pub first_error: Option<String>,
    /// Completed cycles of each task (client), in task order.
    pub per_task: Vec<u64>,
}

impl Sample {
    /// Cycles per second of wall time.
    ///
    /// # Examples
    ///
    /// ```
    /// let s = redquorum_benches::Sample { cycles: 50, elapsed: std::time::Duration::from_millis(500), ..Default::default() };
    /// assert_eq!(s.cycles_per_sec(), 100.0);
    /// ```
    #[must_use]
    pub fn cycles_per_sec(&self) -> f64 {
        self.cycles as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// Client CPU microseconds per cycle (NaN if unknown or no cycles).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = redquorum_benches::Sample { cycles: 10, cpu: Some(std::time::Duration::from_millis(1)), ..Default::default() };
    /// assert_eq!(s.cpu_us_per_cycle(), 100.0);
    /// ```
    #[must_use]
    pub fn cpu_us_per_cycle(&self) -> f64 {
        match self.cpu {
            Some(cpu) if self.cycles > 0 => cpu.as_secs_f64() * 1e6 / self.cycles as f64,
            _ => f64::NAN,
        }
    }

    /// The `q` quantile of `latencies` in microseconds; NaN when empty.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut s = redquorum_benches::Sample::default();
    /// s.acquire.record(std::time::Duration::from_micros(250));
    /// assert_eq!(redquorum_benches::Sample::us(&s.acquire, 0.5), 250.0);
    /// ```
    #[must_use]
    pub fn us(latencies: &Latencies, q: f64) -> f64 {
        latencies.quantile_us(q)
    }

    /// How the cycles were shared among the tasks (`None` when no task
    /// finished).
    ///
    /// # Examples
    ///
    /// ```
    /// let s = redquorum_benches::Sample { per_task: vec![3, 5], ..Default::default() };
    /// assert_eq!(s.fairness().unwrap().min, 3);
    /// ```
    #[must_use]
    pub fn fairness(&self) -> Option<Fairness> {
        Fairness::of(&self.per_task)
    }

    /// The `redquorum bench --json` figures of this run; `handoff` and
    /// `fairness` only for the contended workloads.
    ///
    /// # Examples
    ///
    /// ```
    /// let report = redquorum_benches::Sample::default().report(false);
    /// let json = serde_json::to_string(&report).unwrap();
    /// // No cycles: the latencies are unknown, which JSON writes as null.
    /// assert!(json.starts_with(r#"{"cycles_per_sec":0.0,"acquire_p50_us":null,"#), "{json}");
    /// ```
    #[must_use]
    pub fn report(&self, with_handoff: bool) -> Report {
        let handoff = |q| with_handoff.then(|| round3(Self::us(&self.handoff, q)));
        Report {
            cycles_per_sec: round3(self.cycles_per_sec()),
            acquire_p50_us: round3(Self::us(&self.acquire, 0.5)),
            acquire_p99_us: round3(Self::us(&self.acquire, 0.99)),
            release_p50_us: round3(Self::us(&self.release, 0.5)),
            release_p99_us: round3(Self::us(&self.release, 0.99)),
            client_cpu_us_per_cycle: round3(self.cpu_us_per_cycle()),
            handoff_p50_us: handoff(0.5),
            handoff_p99_us: handoff(0.99),
            fairness: with_handoff.then(|| self.fairness()).flatten(),
            cycles: self.cycles,
            errors: self.errors,
        }
    }
}

/// The figures of one run, as `redquorum bench --json` prints them.
/// Unknown figures (NaN: no samples, or no CPU time) are `null`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Cycles per second of wall time.
    pub cycles_per_sec: Option<f64>,
    /// Acquire latency, median, µs.
    pub acquire_p50_us: Option<f64>,
    /// Acquire latency, 99th percentile, µs.
    pub acquire_p99_us: Option<f64>,
    /// Release latency, median, µs.
    pub release_p50_us: Option<f64>,
    /// Release latency, 99th percentile, µs.
    pub release_p99_us: Option<f64>,
    /// Client CPU time per cycle, µs.
    pub client_cpu_us_per_cycle: Option<f64>,
    /// Hand-off (release start to the next acquire), median, µs; contended workloads only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_p50_us: Option<Option<f64>>,
    /// Hand-off, 99th percentile, µs; contended workloads only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handoff_p99_us: Option<Option<f64>>,
    /// Critical sections per client (least, most, mean); contended workloads only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fairness: Option<Fairness>,
    /// Completed cycles.
    pub cycles: u64,
    /// Failed acquires or releases.
    pub errors: u64,
}

/// `value` to three decimals, or `None` (JSON `null`) when it is not finite.
///
/// # Examples
///
/// ```
/// assert_eq!(redquorum_benches::round3(1.23456), Some(1.235));
/// assert_eq!(redquorum_benches::round3(f64::NAN), None);
/// ```
#[must_use]
pub fn round3(value: f64) -> Option<f64> {
    value.is_finite().then(|| (value * 1000.0).round() / 1000.0)
}

/// Per-task measurements, merged at the end.
#[derive(Default)]
struct Tally {
    cycles: u64,
    errors: u64,
    acquire: Latencies,
    release: Latencies,
    handoff: Latencies,
    first_error: Option<String>,
}

impl Tally {
    fn error(&mut self, error: String) {
        self.errors += 1;
        self.first_error.get_or_insert(error);
    }
}

/// Shared state of the contended workloads: when the last release began.
#[derive(Default)]
struct Handoff {
    released_at: Mutex<Option<Instant>>,
}

impl Handoff {
    fn releasing(&self) {
        *self.released_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    /// The gap since the last release began, counted once per release.
    fn acquired(&self) -> Option<Duration> {
        let mut released_at = self.released_at.lock().unwrap_or_else(|e| e.into_inner());
        released_at.take().map(|t| t.elapsed())
    }
}

/// Runs `workload` against `locker` for about `duration`, on resources named
/// after `tag` (use a fresh tag per run: the keys of a run are its own).
///
/// A blocked acquire is given up 5 s after the end (counted as an error).
///
/// # Cancel safety
///
/// Not cancel safe: dropping it leaves the spawned tasks running to their end.
pub async fn run<L: Locker>(
    locker: Arc<L>,
    workload: Workload,
    duration: Duration,
    tag: &str,
) -> Sample {
    let start = Instant::now();
    let end = start + duration;
    let cpu_before = crate::cpu::process_cpu();
    let handoff = Arc::new(Handoff::default());
    let (turns, _) = tokio::sync::watch::channel(0u64);
    let turns = Arc::new(turns);
    let tasks = match workload {
        Workload::Sequential => 1,
        Workload::Parallel { tasks } => tasks.max(1),
        Workload::Contended { workers, .. } => workers.max(1),
        Workload::PingPong { .. } => 2,
    };
    let mut handles = Vec::with_capacity(tasks);
    for task in 0..tasks {
        let locker = Arc::clone(&locker);
        let handoff = Arc::clone(&handoff);
        let turns = Arc::clone(&turns);
        let tag = tag.to_owned();
        handles.push(tokio::spawn(async move {
            match workload {
                Workload::Sequential | Workload::Parallel { .. } => {
                    fresh_cycles(&*locker, &format!("{tag}:{task}"), end).await
                }
                Workload::Contended { hold, .. } => {
                    contended_cycles(&*locker, &tag, hold, end, &handoff, None).await
                }
                Workload::PingPong { hold } => {
                    contended_cycles(&*locker, &tag, hold, end, &handoff, Some(&turns)).await
                }
            }
        }));
    }
    let mut sample = Sample::default();
    for handle in handles {
        let Ok(tally) = handle.await else {
            sample.errors += 1;
            sample.per_task.push(0);
            continue;
        };
        sample.per_task.push(tally.cycles);
        sample.cycles += tally.cycles;
        sample.errors += tally.errors;
        sample.acquire.merge(&tally.acquire);
        sample.release.merge(&tally.release);
        sample.handoff.merge(&tally.handoff);
        if sample.first_error.is_none() {
            sample.first_error = tally.first_error;
        }
    }
    sample.elapsed = start.elapsed();
    sample.cpu = match (cpu_before, crate::cpu::process_cpu()) {
        (Some(before), Some(after)) => Some(after.saturating_sub(before)),
        _ => None,
    };
    sample
}

/// A and B: acquire + release on a new resource each cycle.
async fn fresh_cycles<L: Locker>(locker: &L, prefix: &str, end: Instant) -> Tally {
    let mut tally = Tally::default();
    let mut i = 0u64;
    while Instant::now() < end {
        let resource = format!("{prefix}:{i}");
        i += 1;
        let t0 = Instant::now();
        let held = match locker.acquire(&resource).await {
            Ok(grant) => grant.held,
            Err(e) => {
                tally.error(format!("acquire: {e}"));
                continue;
            }
        };
        let t1 = Instant::now();
        let released = locker.release(held).await;
        let t2 = Instant::now();
        tally.acquire.record(t1 - t0);
        tally.release.record(t2 - t1);
        match released {
            Ok(()) => tally.cycles += 1,
            Err(e) => tally.error(format!("release: {e}")),
        }
    }
    tally
}

/// C and C2: take the one resource, hold it, release; with `turns` (C2) a
/// worker waits after its release until the other one has had the lock.
async fn contended_cycles<L: Locker>(
    locker: &L,
    resource: &str,
    hold: Duration,
    end: Instant,
    handoff: &Handoff,
    turns: Option<&tokio::sync::watch::Sender<u64>>,
) -> Tally {
    let give_up = end + Duration::from_secs(5);
    let mut tally = Tally::default();
    let mut my_turn: Option<u64> = None;
    let mut seen = turns.map(|t| t.subscribe());
    while Instant::now() < end {
        if let (Some(mine), Some(seen)) = (my_turn, seen.as_mut()) {
            let other_went = seen.wait_for(|turn| *turn > mine);
            if !matches!(
                tokio::time::timeout_at(end.into(), other_went).await,
                Ok(Ok(_))
            ) {
                break;
            }
        }
        let t0 = Instant::now();
        let held = match tokio::time::timeout_at(give_up.into(), locker.acquire(resource)).await {
            Ok(Ok(grant)) => grant.held,
            Ok(Err(e)) => {
                tally.error(format!("acquire: {e}"));
                break;
            }
            Err(_) => {
                tally.error("acquire: still blocked 5 s after the end".to_owned());
                break;
            }
        };
        let t1 = Instant::now();
        if let Some(gap) = handoff.acquired() {
            tally.handoff.record(gap);
        }
        if let Some(turns) = turns {
            turns.send_modify(|turn| *turn += 1);
            my_turn = Some(*turns.borrow());
        }
        tokio::time::sleep(hold).await;
        handoff.releasing();
        let t2 = Instant::now();
        let released = locker.release(held).await;
        tally.acquire.record(t1 - t0);
        tally.release.record(t2.elapsed());
        match released {
            Ok(()) => tally.cycles += 1,
            Err(e) => tally.error(format!("release: {e}")),
        }
    }
    tally
}
