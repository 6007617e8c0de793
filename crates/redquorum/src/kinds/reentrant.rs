//! The reentrant lock: an explicit owner may take a resource it already holds.
//!
//! Rust has no thread identity, so ownership is a value: a [`ReentrantOwner`]
//! (cloneable, shareable across tasks, and its [`id`](ReentrantOwner::id)
//! passable to another process). A reentrant lock is a kind of the one lock
//! a resource name has (`protocol/scripts/ops/`): the lock records its owner, and
//! each hold is its own entry with its own expiry; holds of that owner share,
//! anything else is refused. Release removes one hold and frees the lock at
//! the last; expiry bounds everything.

use std::fmt;

use crate::error::Error;
use crate::kinds::held_methods::held_methods;
use crate::lease::held::Held;
use crate::protocol::claim::Kind;
use crate::protocol::token::OwnerToken;
use crate::redlock::{Holders, Redlock};

/// An owner identity for reentrant locks.
///
/// Every lock taken through the same owner (or a clone, or an owner rebuilt
/// from its [`id`](Self::id) in another process) may re-enter a resource the
/// owner already holds; any other owner is refused until every hold is
/// released or expired.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let owner = redlock.reentrant_owner();
/// let outer = owner.lock("ledger").await?;
/// let inner = owner.lock("ledger").await?; // re-entry: no wait
/// assert!(redlock.reentrant_owner().try_lock("ledger").await.is_err());
/// inner.release().await?;
/// outer.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ReentrantOwner {
    redlock: Redlock,
    id: String,
}

impl fmt::Debug for ReentrantOwner {
    // The id is a capability over this owner's locks: shown only as a prefix.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReentrantOwner")
            .field("id", &format_args!("{}…", &self.id[..8]))
            .finish()
    }
}

impl Redlock {
    /// A new reentrant owner with a fresh random id, locking with this handle's options.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let owner = redlock.reentrant_owner();
    /// assert_eq!(owner.id().len(), 32);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn reentrant_owner(&self) -> ReentrantOwner {
        ReentrantOwner {
            redlock: self.clone(),
            id: OwnerToken::random().to_string(),
        }
    }

    /// The reentrant owner with a known id, e.g. one handed over by another process.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOwnerId`] unless `id` is 32 hex digits.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let owner = redlock.reentrant_owner();
    /// let held = owner.lock("job:9").await?;
    /// // e.g. in a child process that was given the id:
    /// let same = redlock.reentrant_owner_with_id(owner.id())?;
    /// let nested = same.try_lock("job:9").await?;
    /// nested.release().await?;
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn reentrant_owner_with_id(&self, id: &str) -> Result<ReentrantOwner, Error> {
        if !is_owner_id(id) {
            return Err(Error::InvalidOwnerId);
        }
        Ok(ReentrantOwner {
            redlock: self.clone(),
            id: id.to_ascii_lowercase(),
        })
    }
}

/// An owner id is what `OwnerToken` displays: 32 hex digits.
fn is_owner_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

impl ReentrantOwner {
    /// The owner's id (32 hex digits): give it to another process to let it re-enter.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(owner: &redquorum::ReentrantOwner) {
    /// let child = std::process::Command::new("worker")
    ///     .env("LEDGER_LOCK_OWNER", owner.id()) // the worker may re-enter
    ///     .spawn();
    /// # }
    /// ```
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Makes one attempt to take `resource` (or one more hold on it) on a quorum.
    ///
    /// # Errors
    ///
    /// - [`Error::Contended`]: another owner (or another lock kind) holds it.
    /// - [`Error::Unavailable`], [`Error::Expired`], [`Error::EmptyResource`],
    ///   as for [`Redlock::try_lock`]; the attempt's hold was unwound on every node.
    ///
    /// With fencing on (the default) every hold, nested ones included, gets
    /// its own [`FenceToken`](crate::FenceToken) when it asks (see
    /// [`ReentrantLock`]).
    ///
    /// # Cancel safety
    ///
    /// As [`Redlock::try_lock`]: if dropped after the requests went out, a
    /// guard spawns the removal of this hold on every node.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let owner = redlock.reentrant_owner();
    /// let first = owner.try_lock("cart:7").await?;
    /// let second = owner.try_lock("cart:7").await?;
    /// drop((first, second)); // both holds are released in the background
    /// # Ok(()) }
    /// ```
    pub async fn try_lock(&self, resource: &str) -> Result<ReentrantLock, Error> {
        let claim = self
            .redlock
            .claim(Kind::Reentrant, resource)?
            .of_owner(&self.id);
        Ok(ReentrantLock {
            held: self.redlock.take(claim).await?,
        })
    }

    /// Takes `resource` (or one more hold on it), retrying until the handle's `wait` runs out.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] with the last attempt's error, or [`Error::EmptyResource`].
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
    /// let lock = redlock.reentrant_owner().lock("report").await?;
    /// lock.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock(&self, resource: &str) -> Result<ReentrantLock, Error> {
        self.redlock
            .waiting(resource, Holders::Several, || self.try_lock(resource))
            .await
    }
}

/// One hold of a reentrant lock, valid until [`deadline`](Self::deadline).
///
/// The resource stays taken for other owners while any hold of this owner
/// is live. Dropping it releases this hold in the background.
///
/// Each hold has its own lease: [`auto_extend`](Self::auto_extend),
/// [`lease`](Self::lease) and [`lost`](Self::lost) work as on [`crate::Lock`].
///
/// **Fencing.** Each hold gets its own [`fence`](Self::fence) token,
/// greater than the token of every hold of *another* owner (and every other
/// lock kind) granted before it was asked for. Holds of one owner do not
/// exclude each other, so their tokens order nothing between them: a
/// resource that refuses lower tokens could refuse one hold's writes after
/// another hold of the same owner wrote. Use the outermost hold's token for
/// all of one owner's writes.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let lock = redlock.reentrant_owner().lock("ledger").await?;
/// assert_eq!(lock.resource(), "ledger");
/// assert!(lock.is_valid());
/// lock.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a ReentrantLock releases its hold at once"]
pub struct ReentrantLock {
    held: Held,
}

held_methods!(ReentrantLock);

#[cfg(test)]
mod tests {
    use crate::kinds::{assert_send, assert_send_sync_static};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_owner_token_is_a_valid_owner_id(_seed in 0u8..255) {
            prop_assert!(super::is_owner_id(&super::OwnerToken::random().to_string()));
        }

        #[test]
        fn any_32_hex_digits_are_an_owner_id(id in "[0-9a-fA-F]{32}") {
            prop_assert!(super::is_owner_id(&id));
        }
    }

    #[test]
    fn malformed_owner_ids_are_refused() {
        for id in [
            "",
            "abc",
            &"a".repeat(31),
            &"a".repeat(33),
            &"g".repeat(32),
            &"é".repeat(16),
        ] {
            assert!(!super::is_owner_id(id), "{id:?}");
        }
    }

    #[test]
    fn bounds() {
        assert_send_sync_static::<super::ReentrantLock>();
        assert_send_sync_static::<super::ReentrantOwner>();
    }

    #[allow(dead_code, unused_must_use)]
    async fn futures_are_send(owner: super::ReentrantOwner, mut lock: super::ReentrantLock) {
        assert_send(&owner.try_lock("r"));
        assert_send(&owner.lock("r"));
        assert_send(&lock.extend());
        assert_send(&lock.lost());
        assert_send(&lock.fence());
        assert_send(&lock.release());
    }
}
