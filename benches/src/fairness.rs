//! Fairness under contention: how the critical sections of one run were
//! shared among its clients (tasks). A lock whose waiters poll can starve
//! some of them (python-redis-lock's benchmark shows redis-py's polling
//! lock with a minimum of 0); the contended workloads report the least and
//! the most any one client got, beside the mean.

use serde::Serialize;

/// The critical sections each client of one run got: least, most, mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fairness {
    /// Clients in the run.
    pub clients: usize,
    /// The fewest critical sections any one client got.
    pub min: u64,
    /// The most any one client got.
    pub max: u64,
    /// The mean per client.
    pub mean: f64,
}

impl Fairness {
    /// The fairness of a run whose clients got `per_client` critical
    /// sections each; `None` for no clients.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_benches::Fairness;
    /// let fair = Fairness::of(&[10, 6, 8]).unwrap();
    /// assert_eq!((fair.min, fair.max, fair.mean), (6, 10, 8.0));
    /// assert_eq!(fair.min_share(), 0.75);
    /// assert_eq!(Fairness::of(&[]), None);
    /// ```
    #[must_use]
    pub fn of(per_client: &[u64]) -> Option<Self> {
        let min = *per_client.iter().min()?;
        let max = *per_client.iter().max()?;
        let total: u64 = per_client.iter().sum();
        Some(Self {
            clients: per_client.len(),
            min,
            max,
            mean: total as f64 / per_client.len() as f64,
        })
    }

    /// The least-served client's share of the mean: 1 when every client got
    /// as many, 0 when one was starved (NaN when nobody got any).
    #[must_use]
    pub fn min_share(&self) -> f64 {
        self.min as f64 / self.mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_starved_client_has_no_share() {
        let fair = Fairness::of(&[0, 12, 4]).unwrap();
        assert_eq!(fair.min_share(), 0.0);
        assert_eq!(fair.clients, 3);
    }

    proptest! {
        #[test]
        fn the_mean_lies_between_the_least_and_the_most(per in prop::collection::vec(0u64..10_000, 1..64)) {
            let fair = Fairness::of(&per).unwrap();
            prop_assert!(fair.min as f64 <= fair.mean && fair.mean <= fair.max as f64);
            prop_assert!(fair.min_share() <= 1.0 || fair.mean == 0.0);
        }
    }
}
