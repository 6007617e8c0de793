//! Random future drops: the workload's cancellation. A caller that gives up
//! on an acquire or a release (a request timed out, a `select!` took
//! another branch) drops its future at any await point; the lock must then
//! leave nothing behind (the acquire's holds unwound, the release still
//! done), which the key audit and the leak check then count.

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
        };
        let slow = tokio::time::sleep(Duration::from_secs(5));
        assert_eq!(always.run(&mut rng, slow).await, None);
        let never = DropPlan {
            chance: 0.0,
            within: Duration::from_millis(5),
        };
        let slow = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            7
        };
        assert_eq!(never.run(&mut rng, slow).await, Some(7));
    }
}
