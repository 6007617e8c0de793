//! The read-write lock: many readers or one writer per resource, on the quorum.
//!
//! Readers and writers are kinds of the one lock a resource name has
//! (`protocol/scripts/ops/`): readers share with readers only, and each reader's
//! hold has its own expiry (so a crashed reader's hold ends after its ttl
//! while others keep the lock alive). A waiting writer records its intent
//! where readers hold the lock: new readers are refused, so a writer
//! waiting behind a stream of readers gets in once the current ones drain.
//!
//! A read asked while the same task holds the write lock is **refused**
//! (contended): each lock has its own token and there is no owner identity
//! across them, so re-entry would have to trust the caller. Take only the
//! write lock if you need both.

use std::sync::Arc;

use crate::error::Error;
use crate::kinds::held_methods::held_methods;
use crate::lease::held::Held;
use crate::lease::ticket::Ticket;
use crate::protocol::claim::Kind;
use crate::protocol::token::OwnerToken;
use crate::quorum::drop_guard::DropGuard;
use crate::redlock::{Holders, Redlock};

impl Redlock {
    /// Makes one attempt to take `resource` for reading (shared) on a quorum.
    ///
    /// # Errors
    ///
    /// - [`Error::Contended`]: a writer (or any lock kind but readers) holds
    ///   it, or a writer waits for it, on enough nodes.
    /// - [`Error::Unavailable`], [`Error::Expired`], [`Error::EmptyResource`],
    ///   as for [`Redlock::try_lock`]; the reader was unwound on every node.
    ///
    /// # Cancel safety
    ///
    /// As [`Redlock::try_lock`]: a dropped attempt is unwound in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let a = redlock.try_read_lock("catalog").await?;
    /// let b = redlock.try_read_lock("catalog").await?; // readers share
    /// assert!(redlock.try_write_lock("catalog").await.is_err());
    /// a.release().await?;
    /// b.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_read_lock(&self, resource: &str) -> Result<ReadLock, Error> {
        Ok(ReadLock {
            held: self.hold(Kind::Read, resource).await?,
        })
    }

    /// Takes `resource` for reading, retrying until the handle's `wait` runs
    /// out; woken by release notifications like [`Redlock::lock`] (every
    /// release wakes every waiting reader: readers share).
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] with the last attempt's error, or [`Error::EmptyResource`].
    ///
    /// # Cancel safety
    ///
    /// As [`try_read_lock`](Self::try_read_lock).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let read = redlock.read_lock("catalog").await?;
    /// read.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn read_lock(&self, resource: &str) -> Result<ReadLock, Error> {
        self.waiting(resource, Holders::Shared, || self.try_read_lock(resource))
            .await
    }

    /// Makes one attempt to take `resource` for writing (exclusive) on a quorum.
    ///
    /// A failed attempt leaves nothing behind, not even writer intent: only
    /// [`write_lock`](Self::write_lock), which keeps trying, holds readers back.
    ///
    /// # Errors
    ///
    /// - [`Error::Contended`]: readers, another writer (or any other lock
    ///   kind), or another writer's intent hold it on enough nodes.
    /// - [`Error::Unavailable`], [`Error::Expired`], [`Error::EmptyResource`],
    ///   as for [`Redlock::try_lock`].
    ///
    /// # Cancel safety
    ///
    /// As [`Redlock::try_lock`]: a dropped attempt is unwound in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let write = redlock.try_write_lock("catalog").await?;
    /// assert!(redlock.try_read_lock("catalog").await.is_err());
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_write_lock(&self, resource: &str) -> Result<WriteLock, Error> {
        Ok(WriteLock {
            held: self.hold(Kind::Write, resource).await?,
        })
    }

    /// Takes `resource` for writing, retrying until the handle's `wait` runs
    /// out; woken by release notifications like [`Redlock::lock`].
    ///
    /// Between attempts its intent stays on the nodes where readers held it,
    /// so new readers are refused and the writer is not starved. Giving up
    /// (or dropping the future) removes the intent.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] with the last attempt's error, or [`Error::EmptyResource`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe in effect: a dropped call unwinds its attempt and removes
    /// its intent in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let write = redlock.write_lock("catalog").await?;
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn write_lock(&self, resource: &str) -> Result<WriteLock, Error> {
        // One token for every attempt, so the intent recorded by one attempt
        // lets the next one in.
        let token = OwnerToken::random();
        let attempt = || async {
            let claim = self.claim_with(Kind::Write, resource, token)?.waiting();
            Ok(WriteLock {
                held: self.take(claim).await?,
            })
        };
        // Giving up, or being dropped, removes the intent on every node.
        let clear = Arc::new(self.claim_with(Kind::Write, resource, token)?);
        let quorum = Arc::clone(self.shared_quorum());
        let guard = DropGuard::new({
            let (quorum, clear) = (Arc::clone(&quorum), Arc::clone(&clear));
            move || quorum.spawn_on_all(clear.release())
        });
        let result = self.waiting(resource, Holders::One, attempt).await;
        guard.disarm();
        if result.is_err() {
            let _ = quorum.release(&clear).await;
        }
        result
    }
}

/// A shared (read) hold on a resource, valid until [`deadline`](Self::deadline).
///
/// Other readers may hold it at the same time; no writer can. Dropping it
/// releases in the background. [`auto_extend`](Self::auto_extend),
/// [`lease`](Self::lease) and [`lost`](Self::lost) work as on [`crate::Lock`].
///
/// **Fencing.** Readers do not exclude each other, so a reader's
/// [`fence`](Self::fence) token orders it against **writers only**: it is
/// greater than the token of every write lock granted before the read was
/// asked for, and lower than the token of every write lock asked for after
/// it was granted. Between concurrent readers it orders nothing useful; a
/// resource must not refuse one reader because another reader's token is higher.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let read = redlock.read_lock("prices").await?;
/// assert_eq!(read.resource(), "prices");
/// read.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a ReadLock releases it at once"]
pub struct ReadLock {
    held: Held,
}

held_methods!(ReadLock);

/// The exclusive (write) hold on a resource, valid until [`deadline`](Self::deadline).
///
/// No reader and no other writer can hold it meanwhile. Dropping it
/// releases in the background. [`auto_extend`](Self::auto_extend),
/// [`lease`](Self::lease) and [`lost`](Self::lost) work as on [`crate::Lock`].
///
/// **Fencing.** Its [`fence`](Self::fence) token is greater than the token
/// of every lock on this resource name (write, read, plain or reentrant: they
/// share one counter) granted before this one was asked for.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let write = redlock.write_lock("prices").await?;
/// assert!(write.is_valid());
/// write.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a WriteLock releases it at once"]
pub struct WriteLock {
    held: Held,
}

held_methods!(WriteLock);

impl WriteLock {
    /// This write lock as a [`Ticket`] another task or process takes it
    /// over with ([`Redlock::adopt_write`]), as [`Lock::ticket`](crate::Lock::ticket):
    /// this handle keeps holding until then, and learns of the move as a
    /// loss. A ticket is a capability: keep it out of logs.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let write = redlock.write_lock("prices").await?;
    /// let ticket = write.ticket();
    /// assert_eq!(ticket.kind(), "write");
    /// let adopted = redlock.adopt_write(&ticket).await?;
    /// assert_eq!(write.lease().lost().await, redquorum::LostReason::Moved);
    /// adopted.release().await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn ticket(&self) -> Ticket {
        self.held.ticket()
    }

    /// This write lock as a [`Ticket`], letting go of it here without
    /// releasing (its watchdog stops): the lease runs until an adopter
    /// takes it over, or expires at its deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let ticket = redlock.write_lock("prices").await?.into_ticket();
    /// let write = redlock.resume_write(&ticket).await?;
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn into_ticket(mut self) -> Ticket {
        self.held.let_go_as_ticket()
    }
}

impl Redlock {
    /// Takes over the write lock a [`Ticket`] hands over, as
    /// [`Redlock::adopt`] takes over a [`Lock`](crate::Lock)'s: moved on a
    /// quorum, owner-checked (a waiting writer's intent moves with it), the
    /// fencing token carried over, the old handle losing it; of two
    /// adopters at most one wins, and a failed adoption moves the hold back.
    ///
    /// # Errors
    ///
    /// As [`Redlock::adopt`]; [`Error::TicketKind`] for a plain lock's
    /// ticket (nothing sent).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let ticket = redlock.write_lock("prices").await?.into_ticket();
    /// let write = redlock.adopt_write(&ticket).await?;
    /// assert!(redlock.try_read_lock("prices").await.is_err()); // still exclusive
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn adopt_write(&self, ticket: &Ticket) -> Result<WriteLock, Error> {
        Ok(WriteLock {
            held: self.adopt_hold(Kind::Write, ticket).await?,
        })
    }

    /// Carries on the write lock a [`Ticket`] names as its owner, without
    /// moving it, as [`Redlock::resume`] does a [`Lock`](crate::Lock)'s.
    ///
    /// # Errors
    ///
    /// As [`Redlock::resume`]; [`Error::TicketKind`] for a plain lock's
    /// ticket (nothing sent).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let ticket = redlock.write_lock("nightly").await?.into_ticket();
    /// let write = redlock.resume_write(&ticket).await?;
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn resume_write(&self, ticket: &Ticket) -> Result<WriteLock, Error> {
        Ok(WriteLock {
            held: self.resume_hold(Kind::Write, ticket).await?,
        })
    }

    /// Releases the write lock a [`Ticket`] names where its owner still
    /// holds it, as [`Redlock::release_ticket`] does a
    /// [`Lock`](crate::Lock)'s: owner-checked, nothing taken up first.
    ///
    /// # Errors
    ///
    /// As [`Redlock::release_ticket`]; [`Error::TicketKind`] for a plain
    /// lock's ticket (nothing sent).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let ticket = redlock.write_lock("nightly").await?.into_ticket();
    /// assert!(redlock.release_write_ticket(&ticket).await? >= 2);
    /// let read = redlock.try_read_lock("nightly").await?; // free again
    /// assert!(matches!(
    ///     redlock.release_write_ticket(&ticket).await,
    ///     Err(redquorum::Error::NotHeld { .. })
    /// ));
    /// read.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release_write_ticket(&self, ticket: &Ticket) -> Result<usize, Error> {
        self.release_ticket_hold(Kind::Write, ticket).await
    }
}

#[cfg(test)]
mod tests {
    use crate::kinds::{assert_send, assert_send_sync_static};

    #[test]
    fn bounds() {
        assert_send_sync_static::<super::ReadLock>();
        assert_send_sync_static::<super::WriteLock>();
    }

    #[allow(dead_code, unused_must_use)]
    async fn futures_are_send(
        redlock: crate::redlock::Redlock,
        mut r: super::ReadLock,
        mut w: super::WriteLock,
    ) {
        assert_send(&redlock.try_read_lock("r"));
        assert_send(&redlock.read_lock("r"));
        assert_send(&redlock.try_write_lock("r"));
        assert_send(&redlock.write_lock("r"));
        assert_send(&r.extend());
        assert_send(&w.extend());
        assert_send(&r.lost());
        assert_send(&r.fence());
        assert_send(&w.lost());
        assert_send(&r.release());
        assert_send(&w.release());
    }
}
