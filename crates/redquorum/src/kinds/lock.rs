//! [`Lock`]: the plain exclusive lock, `Redlock::try_lock` and `Redlock::lock`.

use crate::error::Error;
use crate::kinds::held_methods::held_methods;
use crate::lease::held::Held;
use crate::lease::ticket::Ticket;
use crate::protocol::claim::Kind;
use crate::redlock::{Holders, Redlock};

/// A lock held on a quorum of nodes until [`deadline`](Self::deadline).
///
/// Use it only before its deadline: after that another owner may hold the
/// resource. Dropping it releases in the background (best effort, never
/// blocking); call [`release`](Self::release) to know the outcome, or
/// [`forget`](Self::forget) to leave the keys to expire.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let lock = redlock.lock("inventory:sku-1").await?;
/// assert_eq!(lock.resource(), "inventory:sku-1");
/// assert!(lock.is_valid());
/// // A release returns once a quorum (2 of 3) confirmed it; the rest follows.
/// let released_on = lock.release().await?;
/// assert!(released_on >= 2);
/// # Ok(()) }
/// ```
#[must_use = "dropping a Lock releases it at once"]
pub struct Lock {
    held: Held,
}

held_methods!(Lock);

impl Lock {
    /// This lock as a [`Ticket`] another task or process can take it over
    /// with ([`Redlock::adopt`]); this handle keeps holding (and extending)
    /// until then, and learns of the move as a loss
    /// ([`LostReason::Moved`](crate::LostReason::Moved) at once when the
    /// adopter is this `Redlock` or a clone; otherwise its next extension
    /// fails). A ticket is a capability: keep it out of logs.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let lock = redlock.lock("deploy").await?;
    /// let ticket = lock.ticket();
    /// let adopted = redlock.adopt(&ticket).await?;
    /// assert_eq!(lock.lease().lost().await, redquorum::LostReason::Moved);
    /// adopted.release().await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn ticket(&self) -> Ticket {
        self.held.ticket()
    }

    /// Resolves when someone asks this lock's holder to let go
    /// ([`Redlock::ask_release`], `redquorum release --ask`): the holder
    /// may then finish up and release. Listening starts at the first poll
    /// (a subscription on a quorum of the nodes); an asker that waits asks
    /// every second, so one missed while not listening is heard again.
    /// Asking never takes the lock away: [`Redlock::force_release`] does.
    /// The future borrows nothing: it may be moved into another task that
    /// listens while this one works.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// # let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// use std::time::Duration;
    /// let lock = redlock.lock("batch").await?;
    /// # let asker = redlock.clone();
    /// # let asking = tokio::spawn(async move { asker.ask_release("batch", Duration::from_secs(10)).await });
    /// tokio::select! {
    ///     () = lock.release_asked() => { /* checkpoint the work, then let go */ }
    ///     () = tokio::time::sleep(Duration::from_secs(30)) => { /* the work */ }
    /// }
    /// lock.release().await?;
    /// # assert!(asking.await??);
    /// # Ok(()) }
    /// ```
    pub fn release_asked(&self) -> impl Future<Output = ()> + Send + 'static + use<> {
        self.held.release_asked()
    }

    /// Hands the lock over: its [`Ticket`], this handle gone without
    /// releasing (its watchdog stops). The lease runs until the adopter
    /// takes it over, or expires at its deadline.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let ticket = redlock.lock("deploy").await?.into_ticket();
    /// // In another step of the pipeline (the ticket passed as a string):
    /// let ticket: redquorum::Ticket = ticket.to_string().parse()?;
    /// let lock = redlock.adopt(&ticket).await?;
    /// lock.release().await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn into_ticket(mut self) -> Ticket {
        self.held.let_go_as_ticket()
    }
}

impl Redlock {
    /// Makes one attempt to take `resource` on a quorum.
    ///
    /// Unlike `tokio::sync::Mutex::try_lock` this is `async`: it needs one
    /// round trip to the nodes. It never waits for another holder.
    ///
    /// # Errors
    ///
    /// - [`Error::Contended`]: another owner holds it on enough nodes.
    /// - [`Error::Unavailable`]: too few nodes answered in time.
    /// - [`Error::Expired`]: the quorum came after the lease ran out.
    /// - [`Error::EmptyResource`]; [`Error::Shutdown`] after
    ///   [`shutdown`](Self::shutdown).
    ///
    /// Another lock kind on the same name (a read, write or reentrant lock)
    /// is contention too: one resource name is one lock.
    ///
    /// With fencing on (the default) the [`FenceToken`](crate::FenceToken)
    /// is issued when first asked for ([`Lock::fence`]); once a lock of this
    /// handle has asked (or with `eager_fence`), each node that grants also
    /// proposes the token in the same call.
    ///
    /// In the first three cases every node that might hold our hold was sent
    /// an unwind before the error was returned.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe in effect: if the future is dropped after the requests
    /// went out, a guard spawns the unwind on every node (on the same
    /// connections, so it lands after any acquire still in flight). No lock
    /// is returned and none is left behind beyond that unwind; fence
    /// counters may have been raised, which is harmless (they may run ahead,
    /// never behind).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let held = redlock.try_lock("cron:cleanup").await?;
    /// let again = redlock.try_lock("cron:cleanup").await;
    /// assert!(matches!(again, Err(redquorum::Error::Contended { .. })));
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_lock(&self, resource: &str) -> Result<Lock, Error> {
        Ok(Lock {
            held: self.hold(Kind::Lock, resource).await?,
        })
    }

    /// Takes `resource`, retrying until `wait` runs out.
    ///
    /// A waiter retries as soon as the holder's release is announced (the
    /// release publishes it; one subscriber connection per node is shared by
    /// all waiters of this `Redlock` and its clones), or after the jittered
    /// backoff, whichever comes first: a lost notification, or a hold that
    /// expired instead of being released, costs at most the backoff.
    /// Waiters on one resource in this process queue in FIFO order and only
    /// the first contends, so a release costs one attempt, not one per waiter;
    /// callers that start waiting together send their first attempts one at
    /// a time, and wait for the release of a hold one of them won instead
    /// of trying against it.
    /// Every blocking acquire of every kind waits this way.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] carrying the last attempt's error (and its
    /// per-node outcomes), or [`Error::EmptyResource`].
    ///
    /// # Cancel safety
    ///
    /// As [`try_lock`](Self::try_lock): dropping it mid-attempt spawns the
    /// unwind; dropping it between attempts leaves nothing behind.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use std::time::Duration;
    /// use redquorum::{Error, LockOptions, Redlock};
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?;
    /// let held = redlock.lock("deploy").await?;
    /// let impatient = redlock.with_options(&LockOptions { wait: Duration::from_millis(200), ..Default::default() })?;
    /// let err = impatient.lock("deploy").await.unwrap_err();
    /// assert!(matches!(err, Error::WaitTimeout { .. }));
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lock(&self, resource: &str) -> Result<Lock, Error> {
        self.waiting(resource, Holders::One, || self.try_lock(resource))
            .await
    }

    /// Takes over the lock a [`Ticket`] hands over, from another task or
    /// process: on each node, owner-checked, the ticket's hold becomes a new
    /// owner's (atomically), lasting this handle's TTL from now; a quorum
    /// must move it. The fencing token, if the ticket has one, carries over
    /// ([`Lock::fence`] returns it without a round trip). The old handle
    /// loses the lock ([`Lock::ticket`] says when it learns). Of two
    /// adopters of one ticket at most one wins.
    ///
    /// The lock is this handle's: its TTL, watchdog, owner information and
    /// lock-delay, its node timeouts. A [`WriteLock`](crate::WriteLock)'s
    /// ticket is adopted by [`adopt_write`](Self::adopt_write); no other
    /// kind has tickets.
    ///
    /// # Errors
    ///
    /// - [`Error::NotHeld`]: the ticket's hold is gone from a quorum
    ///   (released, expired, adopted already, or never real: a forged owner
    ///   token changes nothing anywhere).
    /// - [`Error::Unavailable`], [`Error::Expired`], [`Error::Shutdown`]:
    ///   as [`try_lock`](Self::try_lock).
    /// - [`Error::TicketKind`]: a write lock's ticket (nothing sent).
    ///
    /// Where the move landed without a quorum, it is moved back to the old
    /// owner there before the error returns (keeping its expiry, at most
    /// until the ticket's validity), so a later adoption of the same ticket
    /// may still take it: of two adopters that split the nodes, neither
    /// wins, and a third can.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let lock = redlock.lock("ledger").await?;
    /// let token = lock.fence().await?;
    /// let adopted = redlock.adopt(&lock.into_ticket()).await?;
    /// assert_eq!(adopted.fence().await?, token);
    /// // A ticket whose hold is gone changes nothing.
    /// let stale = adopted.ticket();
    /// adopted.release().await?;
    /// assert!(matches!(redlock.adopt(&stale).await, Err(redquorum::Error::NotHeld { .. })));
    /// # Ok(()) }
    /// ```
    pub async fn adopt(&self, ticket: &Ticket) -> Result<Lock, Error> {
        Ok(Lock {
            held: self.adopt_hold(Kind::Lock, ticket).await?,
        })
    }

    /// Carries on the lock a [`Ticket`] names as its owner, without moving
    /// it: for a step that continues a hold whose holder has gone (a later
    /// step of a pipeline, a restarted process). The hold is confirmed and
    /// renewed for this handle's TTL by an owner-checked extension on a
    /// quorum; the fencing token carries over. Unlike
    /// [`adopt`](Self::adopt), a holder still running keeps holding too (the
    /// same owner in two places): resume only a ticket whose holder has let
    /// go ([`Lock::into_ticket`]) or is gone.
    ///
    /// # Errors
    ///
    /// [`Error::NotHeld`] when the hold is gone from a quorum (nothing is
    /// changed); otherwise as [`Lock::extend`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let ticket = redlock.lock("nightly").await?.into_ticket();
    /// let lock = redlock.resume(&ticket).await?;
    /// // The same owner (the ticket's third field).
    /// assert_eq!(Some(lock.owner().to_string().as_str()), ticket.to_string().split(':').nth(2));
    /// lock.release().await?;
    /// assert!(matches!(redlock.resume(&ticket).await, Err(redquorum::Error::NotHeld { .. })));
    /// # Ok(()) }
    /// ```
    pub async fn resume(&self, ticket: &Ticket) -> Result<Lock, Error> {
        Ok(Lock {
            held: self.resume_hold(Kind::Lock, ticket).await?,
        })
    }

    /// Releases the lock a [`Ticket`] names, on every node where its owner
    /// still holds it (owner-checked: another holder's hold is never
    /// touched), without taking it up first: for a step that ends a hold
    /// whose holder has gone. How many nodes released it (all of them are
    /// asked; it answers once a quorum did).
    ///
    /// # Errors
    ///
    /// [`Error::NotHeld`] when a quorum answered and none held it (nothing
    /// was removed); [`Error::Unavailable`] when too few answered and none
    /// released it; [`Error::TicketKind`] for a write lock's ticket.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let ticket = redlock.lock("nightly").await?.into_ticket();
    /// assert!(redlock.release_ticket(&ticket).await? >= 2);
    /// // Gone: nothing to release, and the next holder is left alone.
    /// let mut next = redlock.lock("nightly").await?;
    /// assert!(matches!(redlock.release_ticket(&ticket).await, Err(redquorum::Error::NotHeld { .. })));
    /// next.extend().await?; // still held
    /// next.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release_ticket(&self, ticket: &Ticket) -> Result<usize, Error> {
        self.release_ticket_hold(Kind::Lock, ticket).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{assert_send, assert_send_sync_static};

    #[test]
    fn bounds() {
        assert_send_sync_static::<Lock>();
        assert_send_sync_static::<crate::redlock::Redlock>();
        assert_send_sync_static::<crate::error::Error>();
        assert_send_sync_static::<crate::error::BuildError>();
        assert_send_sync_static::<crate::lease::watch::LeaseWatch>();
        assert_send_sync_static::<crate::lease::state::AtRisk>();
        assert_send_sync_static::<crate::lease::state::LostReason>();
    }

    #[allow(dead_code, unused_must_use)]
    async fn futures_are_send(redlock: crate::redlock::Redlock, mut lock: Lock) {
        assert_send(&redlock.try_lock("r"));
        assert_send(&redlock.lock("r"));
        assert_send(&lock.extend());
        assert_send(&lock.lost());
        assert_send(&lock.fence());
        assert_send(&lock.lease().at_risk());
        assert_send(&redlock.with_lock("r", |_lease| async {}));
        assert_send(&lock.release());
    }
}
