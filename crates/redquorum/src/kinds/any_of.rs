//! Lock any of K: take whichever of K resources is free, each a full quorum lock.
//!
//! This is the segmented (striped) stock lock of flash sales: stock split in
//! K segments, each behind its own lock, so K buyers proceed at once. Each
//! caller starts at a random position so contenders spread over the K
//! resources instead of all queueing on the first.

use std::future::Future;

use crate::error::Error;
use crate::kinds::lock::Lock;
use crate::redlock::{Holders, Redlock};

/// One pass over `count` candidates (a resource of `lock_any`, a slot of a
/// semaphore), starting at a random one so that concurrent callers spread
/// out: the first one `attempt` takes, with its index; else the last
/// [`Error::Contended`] seen (all taken), else the last retryable error. An
/// error no retry can cure ends the pass at once. `None` when `count` is 0.
pub(crate) async fn first_taken<T, F, Fut>(
    count: usize,
    mut attempt: F,
) -> Option<Result<(usize, T), Error>>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let start = rand::random::<usize>() % count.max(1);
    let (mut contended, mut last) = (None, None);
    for offset in 0..count {
        let index = (start + offset) % count;
        match attempt(index).await {
            Ok(taken) => return Some(Ok((index, taken))),
            Err(error @ Error::Contended { .. }) => contended = Some(error),
            Err(error) if error.is_retryable() => last = Some(error),
            Err(error) => return Some(Err(error)),
        }
    }
    contended.or(last).map(Err)
}

impl Redlock {
    /// Makes one pass over `resources`, starting at a random one, and returns
    /// the first lock taken with its index in `resources`.
    ///
    /// Each try is a full [`try_lock`](Self::try_lock), so the returned
    /// [`Lock`] has the same guarantees (and works with `extend`, `release`).
    ///
    /// # Errors
    ///
    /// - [`Error::NoResources`] for an empty slice; [`Error::EmptyResource`]
    ///   for an empty name (returned when that name is tried).
    /// - When no resource could be taken: the last [`Error::Contended`] seen
    ///   (all K held), else the last error (e.g. [`Error::Unavailable`]).
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock`](Self::try_lock): the attempt in flight is unwound in
    /// the background; locks are never left held by a dropped call.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let segments = ["stock:0", "stock:1"];
    /// let (a, lock_a) = redlock.try_lock_any(&segments).await?;
    /// let (b, lock_b) = redlock.try_lock_any(&segments).await?;
    /// assert_ne!(a, b);
    /// assert!(redlock.try_lock_any(&segments).await.is_err()); // both held
    /// lock_a.release().await?;
    /// lock_b.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_any<S: AsRef<str>>(
        &self,
        resources: &[S],
    ) -> Result<(usize, Lock), Error> {
        first_taken(resources.len(), |index| {
            self.try_lock(resources[index].as_ref())
        })
        .await
        .unwrap_or(Err(Error::NoResources))
    }

    /// Takes any one of `resources`, passing over them again until the
    /// handle's `wait` runs out: after a release notification on any of
    /// them, or the jittered backoff, whichever comes first.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] with the last pass's error (its `resource` is
    /// the first of `resources`), [`Error::NoResources`] or [`Error::EmptyResource`].
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock_any`](Self::try_lock_any).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let (index, lock) = redlock.lock_any(&["stock:0", "stock:1", "stock:2"]).await?;
    /// println!("took segment {index}");
    /// lock.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock_any<S: AsRef<str>>(&self, resources: &[S]) -> Result<(usize, Lock), Error> {
        let name = resources.first().map_or("", |r| r.as_ref());
        let keys: Vec<String> = resources.iter().map(|r| self.key(r.as_ref())).collect();
        // Over one resource it waits its turn as `lock` does; over several it
        // listens (wait/waiters.rs: a release of one may suit any waiter).
        self.wait_for(keys.iter().map(String::as_str).collect(), Holders::One)
            .until_acquired(name, || self.try_lock_any(resources))
            .await
    }
}

#[cfg(test)]
mod tests {
    use crate::kinds::assert_send;

    #[allow(dead_code)]
    fn futures_are_send(redlock: crate::redlock::Redlock) {
        assert_send(&redlock.try_lock_any(&["a", "b"]));
        assert_send(&redlock.lock_any(&["a", "b"]));
    }
}
