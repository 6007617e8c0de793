//! `ClusterBuilder`: a cluster with per-node settings.

use super::cluster::{Cluster, Persistence};
use crate::error::HarnessError;

/// Builds a [`Cluster`] whose nodes differ: persistence, and nodes whose clock runs fast.
///
/// # Examples
///
/// ```
/// use redquorum_harness::{Cluster, Persistence};
/// let cluster = Cluster::builder(3).persistence(Persistence::AofAlways).start().unwrap();
/// assert_eq!(cluster.len(), 3);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct ClusterBuilder {
    n: usize,
    persistence: Persistence,
    clocks: Vec<(usize, f64)>,
    controlled: Vec<(usize, std::time::Duration)>,
}

impl ClusterBuilder {
    pub(crate) fn new(n: usize) -> Self {
        Self {
            n,
            persistence: Persistence::None,
            clocks: Vec::new(),
            controlled: Vec::new(),
        }
    }

    /// What every node writes to disk. Default: [`Persistence::None`].
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{Cluster, Persistence};
    /// let builder = Cluster::builder(1).persistence(Persistence::AofEverySec);
    /// ```
    pub fn persistence(mut self, persistence: Persistence) -> Self {
        self.persistence = persistence;
        self
    }

    /// Node `index`'s clock runs `rate` times as fast as real time (libfaketime).
    /// Default: every clock is real.
    ///
    /// [`start`](Self::start) then needs [`faketime_support`](crate::faketime_support).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum_harness::Cluster::builder(3).fast_clock(2, 10.0);
    /// ```
    pub fn fast_clock(mut self, index: usize, rate: f64) -> Self {
        self.clocks.push((index, rate));
        self
    }

    /// Node `index`'s wall clock can be moved at run time
    /// ([`Cluster::set_clock_offset`]); it starts `offset` ahead of real time.
    /// Default: no node's clock is controlled.
    ///
    /// [`start`](Self::start) then needs [`faketime_support`](crate::faketime_support).
    ///
    /// # Examples
    ///
    /// ```
    /// let builder = redquorum_harness::Cluster::builder(3).controlled_clock(0, std::time::Duration::ZERO);
    /// ```
    pub fn controlled_clock(mut self, index: usize, offset: std::time::Duration) -> Self {
        self.controlled.push((index, offset));
        self
    }

    /// Starts the nodes.
    ///
    /// # Errors
    ///
    /// `redis-server` missing, a node that does not start, or
    /// [`HarnessError::FaketimeUnavailable`] when a fast clock was asked for.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::builder(1).start().unwrap();
    /// assert!(cluster.is_running(0));
    /// ```
    pub fn start(self) -> Result<Cluster, HarnessError> {
        Cluster::start_built(self.n, self.persistence, &self.clocks, &self.controlled)
    }
}
