//! A plain hold handed over as a lease ticket and adopted by another task
//! (`Lock::into_ticket`, `Redlock::adopt`): the torture's hand-overs.

use redquorum::{Redlock, Ticket};
use redquorum_harness::{Grant, HandOver, Refusal};

use super::{HeldKind, KindLocker};
use crate::lock_kind::LockKind;
use crate::refusal::refusal_kind;

impl KindLocker {
    /// The ticket of a plain hold (its watchdog, if any, stops: the hold is
    /// the ticket's now); any other kind of hold is given back.
    pub(crate) fn ticket_of(held: HeldKind) -> HandOver<HeldKind> {
        match held {
            HeldKind::Plain(lock) => HandOver::Ticket(lock.into_ticket().to_string()),
            other => HandOver::Kept(other),
        }
    }

    /// Takes over a plain hold's `ticket` on this locker's nodes: a grant to
    /// a new owner, with the ticket's fencing token (tokenless when it had
    /// none), recorded as a plain hold.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
    /// use redquorum_adapter::{KindLocker, LockKind, Locker};
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build().unwrap();
    /// let locker = KindLocker::for_history(redlock, LockKind::Plain);
    /// let first = locker.acquire("r").await.unwrap();
    /// let redquorum_harness::HandOver::Ticket(ticket) = locker.hand_over(first.held) else {
    ///     panic!("a plain hold has a ticket");
    /// };
    /// let adopted = locker.adopt(&ticket).await.unwrap();
    /// assert_ne!(adopted.owner, first.owner);
    /// assert_eq!(adopted.fence, first.fence);
    /// assert!(locker.adopt(&ticket).await.is_err()); // moved already
    /// locker.release(adopted.held).await.unwrap();
    /// # }
    /// ```
    pub(crate) async fn adopt_ticket(&self, ticket: &str) -> Result<Grant<HeldKind>, Refusal> {
        let ticket: Ticket = ticket
            .parse()
            .map_err(|e: redquorum::TicketError| Refusal::new("other", e.to_string()))?;
        let redlock: &Redlock = &self.redlock;
        let lock = (redlock.adopt(&ticket).await)
            .map_err(|e| Refusal::new(refusal_kind(&e), e.to_string()))?;
        let held = HeldKind::Plain(lock);
        let (owner, deadline, voters) = (held.owner(), held.deadline(), held.voters(redlock));
        let grant = Grant::new(held, owner, deadline);
        let grant = match ticket.fence() {
            Some(token) => grant.with_fence(Some(token.get())),
            None => grant.without_token(),
        };
        Ok(grant
            .with_kind(LockKind::Plain.name(), None)
            .voted_by(voters))
    }
}
