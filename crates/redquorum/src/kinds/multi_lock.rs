//! Locking several resources at once: all of a set or none of it.
//!
//! One claim takes every resource's lock in one operation per node
//! (`protocol/scripts/ops/` grants all or none on each node), so one quorum
//! decides for the whole set and the set has one validity. No holder ever
//! has some of its resources while waiting for others, so two holders that
//! ask for overlapping sets in any order cannot deadlock: an attempt that
//! loses is unwound everywhere and retried. The fencing token is the highest
//! proposal over every resource's counter and is written back to all of
//! them, so it is above every earlier token of each resource.

use crate::error::Error;
use crate::kinds::held_methods::held_methods;
use crate::lease::held::Held;
use crate::protocol::claim::Kind;
use crate::redlock::{Holders, Redlock};

/// Several resources held together on a quorum until
/// [`deadline`](Self::deadline): each excludes every other holder of that
/// resource, of any kind, exactly as a [`Lock`](crate::Lock) would.
///
/// [`resource`](Self::resource) names the set (`"a, b"`);
/// [`resources`](Self::resources) lists it, sorted.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let both = redlock.lock_all(&["account:2", "account:1"]).await?;
/// assert_eq!(both.resources(), ["account:1", "account:2"]);
/// assert!(redlock.try_lock("account:1").await.is_err());
/// both.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a MultiLock releases it at once"]
pub struct MultiLock {
    held: Held,
    resources: Vec<String>,
}

held_methods!(MultiLock);

impl MultiLock {
    /// The resources held, sorted and without duplicates.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(lock: &redquorum::MultiLock) {
    /// for resource in lock.resources() { println!("{resource}"); }
    /// # }
    /// ```
    #[must_use]
    pub fn resources(&self) -> &[String] {
        &self.resources
    }
}

impl Redlock {
    /// Makes one attempt to take every one of `resources` on a quorum, all
    /// or nothing.
    ///
    /// # Errors
    ///
    /// As [`try_lock`](Self::try_lock) (`Contended` when any of them is
    /// held), and [`Error::NoResources`] for an empty set,
    /// [`Error::EmptyResource`] for an empty name.
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock`](Self::try_lock).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let one = redlock.try_lock("b").await?;
    /// // "b" is held: neither "a" nor "b" is taken.
    /// assert!(redlock.try_lock_all(&["a", "b"]).await.is_err());
    /// let a = redlock.try_lock("a").await?;
    /// # drop((one, a));
    /// # Ok(()) }
    /// ```
    pub async fn try_lock_all<S: AsRef<str>>(&self, resources: &[S]) -> Result<MultiLock, Error> {
        let resources = sorted_set(resources)?;
        let mut claim = self.claim(Kind::Lock, &resources[0])?;
        for name in &resources[1..] {
            claim = claim.and(&self.resource_keys(name), Kind::Lock, true);
        }
        claim.resource = resources.join(", ");
        Ok(MultiLock {
            held: self.take(claim).await?,
            resources,
        })
    }

    /// Takes every one of `resources`, retrying until the handle's `wait`
    /// runs out: woken by a release of any of them, or after the jittered
    /// backoff.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] with the last attempt's error, or the errors
    /// of [`try_lock_all`](Self::try_lock_all) for a bad set.
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock`](Self::try_lock).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let transfer = redlock.lock_all(&["account:7", "account:3"]).await?;
    /// let token = transfer.fence().await?; // above every earlier token of both
    /// # let _ = token;
    /// transfer.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock_all<S: AsRef<str>>(&self, resources: &[S]) -> Result<MultiLock, Error> {
        let names = sorted_set(resources)?;
        let keys: Vec<String> = names.iter().map(|name| self.key(name)).collect();
        // A set of one waits its turn as `lock` does; a larger set listens
        // (wait/waiters.rs: a release of one member may complete any waiter's set).
        self.wait_for(keys.iter().map(String::as_str).collect(), Holders::One)
            .until_acquired(&names.join(", "), || self.try_lock_all(&names))
            .await
    }
}

/// The names, sorted and deduplicated; an empty set or name is refused.
fn sorted_set<S: AsRef<str>>(resources: &[S]) -> Result<Vec<String>, Error> {
    let mut names: Vec<String> = resources.iter().map(|r| r.as_ref().to_owned()).collect();
    if names.iter().any(String::is_empty) {
        return Err(Error::EmptyResource);
    }
    names.sort();
    names.dedup();
    if names.is_empty() {
        return Err(Error::NoResources);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::assert_send;

    #[test]
    fn a_set_is_sorted_deduplicated_and_never_empty() {
        assert_eq!(sorted_set(&["b", "a", "b"]).unwrap(), ["a", "b"]);
        assert!(matches!(sorted_set::<&str>(&[]), Err(Error::NoResources)));
        assert!(matches!(sorted_set(&["a", ""]), Err(Error::EmptyResource)));
    }

    #[allow(dead_code)]
    fn futures_are_send(redlock: Redlock) {
        assert_send(&redlock.try_lock_all(&["a", "b"]));
        assert_send(&redlock.lock_all(&["a", "b"]));
    }
}
