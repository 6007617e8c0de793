//! The lease: its state (deadline, extensions, loss) and the signals a
//! holder watches through [`LeaseWatch`](crate::LeaseWatch) (lease/watch.rs).
//!
//! The state lives in a `tokio::sync::watch` channel shared by the held
//! lock, its watchdog task (lease/watchdog.rs) and every [`LeaseWatch`], so a
//! successful extension moves the deadline that all of them see, and a loss
//! wakes every `lost()` future at once (as etcd's `Session.Done()` does)
//! instead of each polling a flag. A lease has three states: held, at risk
//! (an extension failed and less than the stop margin is left) and lost,
//! which is final.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::protocol::token::OwnerToken;

/// Why a lease was lost.
///
/// # Examples
///
/// ```
/// use redquorum::LostReason;
///
/// assert_eq!(LostReason::Expired.to_string(), "the validity ran out before an extension succeeded");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LostReason {
    /// The deadline passed: no extension succeeded in time (nodes down or
    /// slow), or no watchdog was running.
    #[error("the validity ran out before an extension succeeded")]
    Expired,
    /// An extension was refused by a quorum: our key is gone or belongs to another owner.
    #[error("an extension was refused: the key is no longer ours on a quorum")]
    NotHeld,
    /// The watchdog reached `max_extensions` or `max_hold` and stopped extending.
    #[error("the extension limit was reached after {extensions} extensions and {held:?} held")]
    Limit {
        /// Extensions made before the limit.
        extensions: u32,
        /// Time from acquisition to the limit.
        held: Duration,
    },
    /// The holder released the lock (or dropped it, which releases it, or
    /// shut its `Redlock` down).
    #[error("the lock was released by its holder")]
    Released,
    /// The lock moved to another owner: its lease ticket was adopted
    /// ([`Redlock::adopt`](crate::Redlock::adopt)).
    #[error("the lock was moved to the adopter of its lease ticket")]
    Moved,
}

/// Why a lease is at risk: see [`LeaseWatch::at_risk`](crate::LeaseWatch::at_risk).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum::AtRisk;
///
/// let risk = AtRisk::Expiring { left: Duration::from_millis(400) };
/// assert_eq!(risk.to_string(), "400ms of validity left and no extension has succeeded");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AtRisk {
    /// Less validity than the stop margin is left and no extension has
    /// succeeded (the nodes are unreachable, slow, or no watchdog runs).
    /// An extension may still succeed and end the risk; stop anyway.
    #[error("{left:?} of validity left and no extension has succeeded")]
    Expiring {
        /// The validity left when the risk was seen.
        left: Duration,
    },
    /// The lease is already lost.
    #[error("the lease is lost: {0}")]
    Lost(LostReason),
}

/// The lease as every observer sees it.
#[derive(Debug, Clone)]
pub(crate) struct LeaseState {
    pub(crate) deadline: Instant,
    pub(crate) lost: Option<LostReason>,
    pub(crate) extensions: u32,
}

/// One hold's lease, shared by the hold (held.rs), its watchdog task and
/// its `LeaseWatch`es.
#[derive(Debug)]
pub(crate) struct Lease {
    pub(crate) resource: Arc<str>,
    pub(crate) owner: OwnerToken,
    pub(crate) acquired: Instant,
    /// At risk once less validity than this is left (see [`AtRisk`]).
    pub(crate) stop_margin: Duration,
    pub(crate) state: watch::Sender<LeaseState>,
    /// Live watchdog tasks: a guard inside each task decrements it when the
    /// task's future is dropped (finished or aborted), so this cannot lie.
    pub(crate) running: AtomicUsize,
}

impl Lease {
    pub(crate) fn new(
        resource: &str,
        owner: OwnerToken,
        deadline: Instant,
        stop_margin: Duration,
    ) -> Arc<Self> {
        let (state, _) = watch::channel(LeaseState {
            deadline,
            lost: None,
            extensions: 0,
        });
        Arc::new(Self {
            resource: resource.into(),
            owner,
            acquired: Instant::now(),
            stop_margin,
            state,
            running: AtomicUsize::new(0),
        })
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.state.borrow().deadline
    }

    pub(crate) fn lost_reason(&self) -> Option<LostReason> {
        self.state.borrow().lost.clone()
    }

    pub(crate) fn extensions(&self) -> u32 {
        self.state.borrow().extensions
    }

    /// Records a successful extension and returns true, unless the lease
    /// is lost: declared lost, or its deadline passed before this extension
    /// was confirmed (observers may have stopped on the loss already, so it
    /// is declared `Expired` now). Loss is final.
    pub(crate) fn extended(&self, deadline: Instant) -> bool {
        let now = Instant::now();
        let mut extended = false;
        self.state.send_if_modified(|state| {
            if state.lost.is_some() {
                return false;
            }
            if now >= state.deadline {
                state.lost = Some(LostReason::Expired);
                return true;
            }
            state.deadline = deadline;
            state.extensions += 1;
            extended = true;
            true
        });
        extended
    }

    /// Declares the lease `Expired` if its deadline has passed; returns
    /// whether the lease is lost (for any reason).
    pub(crate) fn check_expired(&self) -> bool {
        if self.lost_reason().is_none() && Instant::now() >= self.deadline() {
            self.declare_lost(LostReason::Expired);
        }
        self.lost_reason().is_some()
    }

    /// Declares the lease lost; the first reason wins.
    pub(crate) fn declare_lost(&self, reason: LostReason) {
        self.state.send_if_modified(|state| {
            if state.lost.is_some() {
                return false;
            }
            state.lost = Some(reason);
            true
        });
    }
}

/// Decrements `Lease::running` when the watchdog task's future is dropped.
pub(crate) struct RunningGuard(Arc<Lease>);

impl RunningGuard {
    pub(crate) fn new(shared: Arc<Lease>) -> Self {
        shared.running.fetch_add(1, Ordering::SeqCst);
        Self(shared)
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A lease for unit tests: deadline `deadline`, stop margin 20 ms.
#[cfg(test)]
pub(crate) fn test_lease(deadline: Instant) -> Arc<Lease> {
    Lease::new(
        "r",
        OwnerToken::random(),
        deadline,
        Duration::from_millis(20),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::watch::LeaseWatch;

    #[test]
    fn loss_is_final_and_first_reason_wins() {
        let shared = test_lease(Instant::now() + Duration::from_secs(10));
        shared.declare_lost(LostReason::NotHeld);
        shared.declare_lost(LostReason::Released);
        assert!(!shared.extended(Instant::now() + Duration::from_secs(60)));
        assert_eq!(shared.lost_reason(), Some(LostReason::NotHeld));
        assert_eq!(shared.extensions(), 0);
        assert!(!LeaseWatch::new(shared).is_valid());
    }

    #[test]
    fn extension_moves_the_deadline_and_counts() {
        let shared = test_lease(Instant::now() + Duration::from_secs(1));
        let later = Instant::now() + Duration::from_secs(60);
        assert!(shared.extended(later));
        assert_eq!(shared.deadline(), later);
        assert_eq!(shared.extensions(), 1);
    }

    #[test]
    fn an_extension_confirmed_after_the_deadline_is_a_loss() {
        let shared = test_lease(Instant::now() - Duration::from_millis(1));
        assert!(!shared.extended(Instant::now() + Duration::from_secs(60)));
        assert_eq!(shared.lost_reason(), Some(LostReason::Expired));
        let fresh = test_lease(Instant::now() + Duration::from_secs(60));
        assert!(!fresh.check_expired());
    }

    #[tokio::test]
    async fn lost_resolves_with_the_declared_reason() {
        let shared = test_lease(Instant::now() + Duration::from_secs(60));
        let lost = LeaseWatch::new(Arc::clone(&shared)).lost();
        let declare = async {
            tokio::task::yield_now().await;
            shared.declare_lost(LostReason::NotHeld);
        };
        let (reason, ()) = tokio::join!(lost, declare);
        assert_eq!(reason, LostReason::NotHeld);
    }

    #[tokio::test]
    async fn lost_without_extension_resolves_as_expired_at_the_deadline() {
        let deadline = Instant::now() + Duration::from_millis(50);
        let lost = LeaseWatch::new(test_lease(deadline)).lost().await;
        assert_eq!(lost, LostReason::Expired);
        assert!(Instant::now() >= deadline);
    }
}
