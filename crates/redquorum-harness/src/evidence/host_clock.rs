//! `HostClockStep`: the machine's wall clock stepped during a run.
//!
//! Every local node reads the one wall clock of the machine it runs on:
//! its keys expire by it, and the lock script's `TIME` is it. The lock's
//! deadlines, and the history, run on the monotonic clock. A step of the
//! wall clock against the monotonic one (a virtual machine restored from
//! a snapshot, a time daemon stepping instead of slewing) moves every
//! node's clock at once: forward, every key expires that much early while
//! its holder still counts on it. That is outside the lock's assumptions
//! (docs/operations.md: run time sync in slew mode), so a run that saw one
//! cannot prove exclusion: the torture calls a run with violations and a
//! step void (`run/torture_run.rs`), and the scenario tests run it again.
//!
//! One thread per process watches, from the first [`History`] on: every
//! [`SAMPLE_EVERY`] it reads the monotonic clock, the wall clock, then the
//! monotonic clock again, and keeps the sample only if the two monotonic
//! reads are less than [`SAMPLE_WITHIN`] apart (a thread preempted between
//! its reads would see a step that is not there). A change of the wall
//! clock's offset from the monotonic one by [`STEP_RECORDED`] or more
//! between kept samples is a step. A time daemon's slewing changes it by
//! at most half a millisecond a second.
//!
//! [`History`]: super::History

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::micros;

/// How often the watch samples the clocks.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_millis(2);
/// How close the two monotonic reads around a wall clock read must be for
/// the sample to count.
pub(crate) const SAMPLE_WITHIN: Duration = Duration::from_micros(500);
/// The smallest change of the wall clock against the monotonic one that is
/// recorded as a step: a third of the scenarios' 17 ms drift budget.
pub const STEP_RECORDED: Duration = Duration::from_millis(5);

/// The machine's wall clock moved `by_us` microseconds against the
/// monotonic clock (positive: forward) at `at` (history clock).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let step = redquorum_harness::HostClockStep { at: Duration::from_millis(3730), by_us: 2_616_000 };
/// assert_eq!(step.to_string(), "the machine's wall clock stepped +2616.0 ms at 3730.0 ms");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostClockStep {
    /// When the watch saw it (history clock).
    #[serde(with = "micros")]
    pub at: Duration,
    /// By how much, in microseconds: positive forward, negative back.
    pub by_us: i64,
}

impl std::fmt::Display for HostClockStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the machine's wall clock stepped {:+.1} ms at {:.1} ms",
            self.by_us as f64 / 1e3,
            self.at.as_secs_f64() * 1e3
        )
    }
}

/// Steps found in a series of samples: each sample is the monotonic
/// instant it was taken at and the wall clock's offset from the monotonic
/// clock then, in microseconds.
#[derive(Debug, Default)]
pub(crate) struct StepFinder {
    last_offset_us: Option<i128>,
}

impl StepFinder {
    /// The step since the previous sample, if the offset moved by
    /// [`STEP_RECORDED`] or more.
    pub(crate) fn sample(&mut self, offset_us: i128) -> Option<i64> {
        let last = self.last_offset_us.replace(offset_us)?;
        let by = offset_us - last;
        (by.unsigned_abs() >= STEP_RECORDED.as_micros())
            .then(|| i64::try_from(by).unwrap_or(if by > 0 { i64::MAX } else { i64::MIN }))
    }
}

/// Every step seen since the watch started: when, and by how much.
static STEPS: OnceLock<Mutex<Vec<(Instant, i64)>>> = OnceLock::new();

/// Starts the process's watch, once.
pub(crate) fn watch() {
    STEPS.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("host-clock-watch".into())
            .spawn(run_watch);
        if let Err(error) = spawned {
            eprintln!("harness: the host clock watch could not start: {error}");
        }
        Mutex::default()
    });
}

fn run_watch() {
    let base = Instant::now();
    let mut finder = StepFinder::default();
    loop {
        std::thread::sleep(SAMPLE_EVERY);
        let before = Instant::now();
        let wall = SystemTime::now();
        let after = Instant::now();
        if after.duration_since(before) >= SAMPLE_WITHIN {
            continue;
        }
        let Ok(wall) = wall.duration_since(UNIX_EPOCH) else {
            continue;
        };
        let mono = before.duration_since(base) + after.duration_since(before) / 2;
        let offset = wall.as_micros() as i128 - mono.as_micros() as i128;
        if let Some(by_us) = finder.sample(offset) {
            if let Some(steps) = STEPS.get() {
                lock(steps).push((after, by_us));
            }
        }
    }
}

/// The steps seen at or after `epoch`, on its clock.
pub(crate) fn steps_since(epoch: Instant) -> Vec<HostClockStep> {
    let Some(steps) = STEPS.get() else {
        return Vec::new();
    };
    lock(steps)
        .iter()
        .filter(|(at, _)| *at >= epoch)
        .map(|&(at, by_us)| HostClockStep {
            at: at.duration_since(epoch),
            by_us,
        })
        .collect()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_step_of_the_wall_clock_is_found_with_its_size_and_sign() {
        let mut finder = StepFinder::default();
        assert_eq!(
            finder.sample(1_000_000),
            None,
            "the first sample has nothing to compare"
        );
        assert_eq!(finder.sample(1_000_001), None);
        assert_eq!(finder.sample(3_616_001), Some(2_616_000));
        assert_eq!(
            finder.sample(3_616_002),
            None,
            "measured from the new offset"
        );
        assert_eq!(finder.sample(3_606_002), Some(-10_000));
        assert_eq!(
            finder.sample(3_601_003),
            None,
            "4999 us is below the threshold"
        );
    }

    proptest! {
        /// Slewing (at most 500 ppm over 2 ms samples, here up to 100 times
        /// that) is never a step; one step of 5 ms or more among it is
        /// found once, with its size.
        #[test]
        fn drift_is_no_step_and_one_step_is_found_once(
            drifts in prop::collection::vec(-100_i128..=100, 1..300),
            at in any::<prop::sample::Index>(),
            step in prop_oneof![5_100_i128..10_000_000, -10_000_000_i128..=-5_100],
        ) {
            let mut finder = StepFinder::default();
            let mut offset = 0_i128;
            prop_assert_eq!(finder.sample(offset), None);
            let at = at.index(drifts.len());
            let mut found = Vec::new();
            for (i, drift) in drifts.iter().enumerate() {
                offset += drift + if i == at { step } else { 0 };
                found.extend(finder.sample(offset));
            }
            prop_assert_eq!(found.len(), 1);
            prop_assert_eq!(i128::from(found[0]), step + drifts[at]);
        }
    }
}
