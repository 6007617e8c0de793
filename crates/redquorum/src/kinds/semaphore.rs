//! The counting semaphore: at most K holders of a name at once, each with a
//! leased permit.
//!
//! A majority count would over-admit: with N masters a permit counted on
//! some nodes and not others lets K + 1 in. Instead each permit is one of K
//! slots, and a slot is an ordinary exclusive quorum lock (at
//! `<name's key>:slot:<i>`), so two holders of one slot exclude each other
//! exactly as two holders of a lock do: at most K holders, with Redlock's
//! fault tolerance. The same acquire also joins the name's own lock as a
//! `permit` (all or nothing on each node): permits share it with each
//! other, any other lock kind on the name excludes them, each release is
//! announced on it (waiters wake), and the name's fence counter gives every
//! permit its fencing token.

use crate::error::Error;
use crate::kinds::any_of;
use crate::kinds::held_methods::held_methods;
use crate::lease::held::Held;
use crate::protocol::claim::Kind;
use crate::redlock::{Holders, Redlock};

/// A counting semaphore of `K` permits on one name, across every process
/// that uses the same nodes, name and `K`.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let uploads = redlock.semaphore("uploads", 2)?;
/// let a = uploads.try_acquire().await?;
/// let b = uploads.try_acquire().await?;
/// assert_ne!(a.slot(), b.slot());
/// assert!(uploads.try_acquire().await.is_err()); // both permits out
/// a.release().await?;
/// let c = uploads.acquire().await?; // woken by the release
/// # drop((b, c));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Semaphore {
    redlock: Redlock,
    name: String,
    permits: usize,
}

/// One permit of a [`Semaphore`], held on a quorum until
/// [`deadline`](Self::deadline): a lease like a [`Lock`](crate::Lock)'s
/// (extend, `auto_extend`, `lost`, `at_risk`, a fencing token from the
/// name's counter, released on drop).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let mut permit = redlock.semaphore("encoders", 4)?.acquire().await?;
/// permit.auto_extend(); // a long job keeps its permit
/// let token = permit.fence().await?; // for the storage it writes to
/// println!("slot {} with token {token}", permit.slot());
/// permit.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a Permit gives it back at once"]
pub struct Permit {
    held: Held,
    slot: usize,
}

held_methods!(Permit);

impl Permit {
    /// Which of the semaphore's slots this permit holds (`0..K`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(permit: &redquorum::Permit) {
    /// println!("running in slot {}", permit.slot());
    /// # }
    /// ```
    #[must_use]
    pub fn slot(&self) -> usize {
        self.slot
    }
}

impl Redlock {
    /// The semaphore of `permits` permits named `name`. Every user of the
    /// name must agree on `permits`: the slots are what cap the holders.
    ///
    /// # Errors
    ///
    /// [`Error::EmptyResource`] or [`Error::ZeroPermits`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert!(redlock.semaphore("jobs", 0).is_err());
    /// assert_eq!(redlock.semaphore("jobs", 3)?.permits(), 3);
    /// # Ok(()) }
    /// ```
    pub fn semaphore(&self, name: &str, permits: usize) -> Result<Semaphore, Error> {
        if name.is_empty() {
            return Err(Error::EmptyResource);
        }
        if permits == 0 {
            return Err(Error::ZeroPermits {
                resource: name.to_owned(),
            });
        }
        Ok(Semaphore {
            redlock: self.clone(),
            name: name.to_owned(),
            permits,
        })
    }
}

impl Semaphore {
    /// The semaphore's name.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(semaphore: &redquorum::Semaphore) {
    /// println!("{}", semaphore.name());
    /// # }
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many permits it has (`K`).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(semaphore: &redquorum::Semaphore) {
    /// println!("at most {} at once", semaphore.permits());
    /// # }
    /// ```
    #[must_use]
    pub fn permits(&self) -> usize {
        self.permits
    }

    /// Makes one pass over the slots, starting at a random one so that
    /// contenders spread out, each try a full quorum acquisition; the first
    /// permit taken.
    ///
    /// # Errors
    ///
    /// When no slot could be taken: the last [`Error::Contended`] seen (all
    /// K out, or the name held by another lock kind), else the last error
    /// (e.g. [`Error::Unavailable`]).
    ///
    /// # Cancel safety
    ///
    /// As [`Redlock::try_lock`]: an attempt in flight is unwound in the
    /// background.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let one = redlock.semaphore("exports", 1)?;
    /// let permit = one.try_acquire().await?;
    /// assert!(matches!(one.try_acquire().await, Err(redquorum::Error::Contended { .. })));
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Permit, Error> {
        let taken = any_of::first_taken(self.permits, |slot| async move {
            let claim = self.redlock.claim(Kind::Permit, &self.name)?;
            let slot_key = claim.keys.slot(slot);
            self.redlock.take(claim.and_key(slot_key, Kind::Slot)).await
        });
        // `permits` is at least 1 (checked by `Redlock::semaphore`).
        let (slot, held) = taken.await.unwrap_or(Err(Error::EmptyResource))?;
        Ok(Permit { held, slot })
    }

    /// Takes a permit, passing over the slots again until the handle's
    /// `wait` runs out: woken by any permit's release (each is announced on
    /// the name), or after the jittered backoff.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] with the last pass's error.
    ///
    /// # Cancel safety
    ///
    /// As [`try_acquire`](Self::try_acquire).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let permit = redlock.semaphore("crawlers", 8)?.acquire().await?;
    /// // ... at most 8 of these run at once, on every host ...
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self) -> Result<Permit, Error> {
        // A release frees one permit, so this process's waiters take turns
        // (wait/waiters.rs): the head tries, and a winner's successor tries on
        // the next release (one announced meanwhile is kept for it), or
        // after its backoff, which also covers a permit that expired.
        self.redlock
            .waiting(&self.name, Holders::Several, || self.try_acquire())
            .await
    }
}

#[cfg(test)]
mod tests {
    use crate::kinds::assert_send;

    #[allow(dead_code)]
    fn futures_are_send(semaphore: super::Semaphore) {
        assert_send(&semaphore.try_acquire());
        assert_send(&semaphore.acquire());
    }
}
