//! Random future drops: the workload's cancellation. A caller that gives up
//! on an acquire or a release (a request timed out, a `select!` took
//! another branch) drops its future at any await point; the lock must then
//! leave nothing behind (the acquire's holds unwound, the release still
//! done), which the key audit and the leak check then count.
//!
//! Two kinds of caller: one whose future is cut at once, inside the call's
//! first attempt (a `select!` whose other branch was ready), and one that
//! waits for the lock only as long as its own timeout allows
//! (`tokio::time::timeout` around `lock`, shorter than the lock's wait),
//! which cuts a waiting acquire in whichever attempt is then out.

use std::future::Future;
use std::time::Duration;

use rand::Rng;

/// When and how soon the workload drops futures part-way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DropPlan {
    /// The chance that one acquire or release is raced against a timer.
    pub(crate) chance: f64,
    /// The timer's bound, at most (uniform from zero): short, so the drop
    /// lands inside the call (before its first send, between the sends,
    /// while replies are out, or during the fencing write-back).
    pub(crate) within: Duration,
    /// The chance that an acquire's caller gives up after a timeout of its
    /// own instead (not used for releases).
    pub(crate) give_up: f64,
    /// That timeout's range (uniform).
    pub(crate) give_up_after: (Duration, Duration),
}

impl DropPlan {
    /// Runs `future`, or, with the plan's chance, races it against a random
    /// short timer and drops it if the timer wins (`None`).
    pub(crate) async fn run<F: Future>(&self, rng: &mut impl Rng, future: F) -> Option<F::Output> {
        if self.chance <= 0.0 || !rng.gen_bool(self.chance.min(1.0)) {
            return Some(future.await);
        }
        let bound = rng.gen_range(Duration::ZERO..=self.within);
        tokio::time::timeout(bound, future).await.ok()
    }

    /// Runs an acquire: as [`run`](Self::run), or, for a caller `impatient`
    /// by nature (brief work: a request with a deadline; not a long job)
    /// and with the give-up chance, races it against the caller's own
    /// timeout and drops it if that wins.
    pub(crate) async fn acquire<F: Future>(
        &self,
        rng: &mut impl Rng,
        impatient: bool,
        future: F,
    ) -> Option<F::Output> {
        let (low, high) = self.give_up_after;
        if !impatient || self.give_up <= 0.0 || low > high || !rng.gen_bool(self.give_up.min(1.0)) {
            return self.run(rng, future).await;
        }
        let bound = rng.gen_range(low..=high);
        tokio::time::timeout(bound, future).await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[tokio::test]
    async fn a_planned_drop_drops_a_slow_future_and_never_a_ready_one_late() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let always = DropPlan {
            chance: 1.0,
            within: Duration::from_millis(5),
            give_up: 0.0,
            give_up_after: (Duration::ZERO, Duration::ZERO),
        };
        let slow = tokio::time::sleep(Duration::from_secs(5));
        assert_eq!(always.run(&mut rng, slow).await, None);
        let never = DropPlan {
            chance: 0.0,
            within: Duration::from_millis(5),
            give_up: 0.0,
            give_up_after: (Duration::ZERO, Duration::ZERO),
        };
        let slow = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            7
        };
        assert_eq!(never.run(&mut rng, slow).await, Some(7));
    }

    #[tokio::test]
    async fn an_impatient_caller_waits_at_least_its_timeout_and_never_drops_a_release() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let impatient = DropPlan {
            chance: 0.0,
            within: Duration::ZERO,
            give_up: 1.0,
            give_up_after: (Duration::from_millis(30), Duration::from_millis(40)),
        };
        // Ready within its timeout: kept.
        let quick = async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            1
        };
        assert_eq!(impatient.acquire(&mut rng, true, quick).await, Some(1));
        // Cut, but not before the timeout's low end.
        let start = std::time::Instant::now();
        let slow = tokio::time::sleep(Duration::from_secs(5));
        assert_eq!(impatient.acquire(&mut rng, true, slow).await, None);
        assert!(start.elapsed() >= Duration::from_millis(30));
        // A long job's acquire is not given up on.
        let patient = async {
            tokio::time::sleep(Duration::from_millis(60)).await;
            3
        };
        assert_eq!(impatient.acquire(&mut rng, false, patient).await, Some(3));
        // Releases are not given up on.
        let release = async {
            tokio::time::sleep(Duration::from_millis(60)).await;
            2
        };
        assert_eq!(impatient.run(&mut rng, release).await, Some(2));
    }
}
