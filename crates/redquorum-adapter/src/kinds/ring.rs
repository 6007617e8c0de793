//! The ring of resources an `all-of` acquire takes its set from: the
//! resource asked for and a neighbour, after it and before it in turn.

use std::sync::atomic::Ordering;

use super::KindLocker;

impl KindLocker {
    /// For `all-of`: each acquire of `resources[i]` takes the set of
    /// `resources[i]` and a neighbour around the ring, the one after it and
    /// the one before it in turn, so sets overlap and are asked for in both
    /// orders, as transfers between the same accounts would be. A history
    /// records the resource asked for and the rest of the set it asked for
    /// (`Grant::covering`), so the checker judges the hold on each name.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// use redquorum_adapter::{KindLocker, LockKind, Locker};
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
    /// let ring = vec!["a".to_owned(), "b".to_owned()];
    /// let locker = KindLocker::new(redlock.clone(), LockKind::AllOf).with_ring(ring);
    /// let grant = locker.acquire("a").await.unwrap();
    /// assert!(redlock.try_lock("b").await.is_err()); // "a" took "b" too
    /// locker.release(grant.held).await.unwrap();
    /// # }
    /// ```
    #[must_use]
    pub fn with_ring(mut self, resources: Vec<String>) -> Self {
        self.ring = resources;
        self
    }

    /// The set an `all-of` acquire of `resource` takes.
    pub(super) fn set_of<'a>(&'a self, resource: &'a str) -> Vec<&'a str> {
        let len = self.ring.len();
        let step = if self.turn.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
            1
        } else {
            len.saturating_sub(1)
        };
        let neighbour = self
            .ring
            .iter()
            .position(|r| r == resource)
            .map(|i| self.ring[(i + step) % len].as_str())
            .filter(|other| *other != resource);
        std::iter::once(resource).chain(neighbour).collect()
    }
}
