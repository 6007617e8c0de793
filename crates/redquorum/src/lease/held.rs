//! The lease core: a hold granted by a quorum, whatever its kind. Every
//! public lock type ([`Lock`](crate::Lock), [`ReadLock`](crate::ReadLock),
//! [`WriteLock`](crate::WriteLock), [`ReentrantLock`](crate::ReentrantLock))
//! is a thin type over it (`held_methods!` gives them their methods):
//! owner-checked extend and release on the one fan-out, the watchdog, the
//! lease's signals, the fencing token's deferred write-back, and release on
//! drop.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

use crate::error::Error;
use crate::lease::registry::Registry;
use crate::lease::state::{Lease, LostReason};
use crate::lease::ticket::Ticket;
use crate::lease::watch::LeaseWatch;
use crate::lease::watchdog::{Extender, Watchdog};
use crate::node_id::NodeId;
use crate::options::WatchdogOptions;
use crate::protocol::claim::Claim;
use crate::protocol::fence::FenceToken;
use crate::quorum::coordinator::{Grant, Quorum};

/// A hold on a quorum.
pub(crate) struct Held {
    quorum: Arc<Quorum>,
    pub(crate) claim: Arc<Claim>,
    /// The deadline and loss state, shared with the watchdog and `LeaseWatch`es.
    lease: Arc<Lease>,
    /// How `auto_extend` runs.
    watchdog_options: WatchdogOptions,
    /// The running watchdog, if `auto_extend` was called.
    watchdog: Option<Watchdog>,
    fencing: Fencing,
    /// Which nodes (by index) granted before the decision: the fencing
    /// rounds count only them (protocol/fence.rs), and `granted_by` names them.
    granted_by: Vec<bool>,
    /// The live holds of the `Redlock` this was taken with (for shutdown),
    /// and our entry in it.
    holds: Arc<Registry>,
    registration: u64,
    /// False once released or forgotten: `Drop` then has nothing to do.
    armed: bool,
}

/// The fencing token: proposed (by the acquire, or when first asked for)
/// and written back (and so issued) when first asked for.
enum Fencing {
    Off,
    On {
        /// The highest proposal of the granting quorum, if a quorum proposed.
        proposal: Option<i64>,
        /// Set when the token is asked for: the handle's next acquires
        /// propose one.
        asked: Arc<AtomicBool>,
        token: OnceCell<FenceToken>,
    },
}

impl Held {
    /// A hold `grant`ed on `quorum` for `claim`, registered in `holds`;
    /// `fencing` is its handle's tokens-asked flag, `None` with fencing off.
    pub(crate) fn new(
        quorum: &Arc<Quorum>,
        holds: &Arc<Registry>,
        claim: Arc<Claim>,
        grant: Grant,
        fencing: Option<Arc<AtomicBool>>,
        watchdog_options: WatchdogOptions,
    ) -> Self {
        let lease = Lease::new(
            &claim.resource,
            claim.token,
            grant.deadline,
            watchdog_options.stop_margin_for(claim.ttl),
        );
        let registration = holds.add(Arc::clone(&claim), Arc::clone(&lease));
        let fencing = match fencing {
            Some(asked) => Fencing::On {
                proposal: grant.proposal,
                asked,
                token: OnceCell::new(),
            },
            None => Fencing::Off,
        };
        Self {
            quorum: Arc::clone(quorum),
            claim,
            lease,
            watchdog_options,
            watchdog: None,
            fencing,
            granted_by: grant.granted_by,
            holds: Arc::clone(holds),
            registration,
            armed: true,
        }
    }

    pub(crate) fn resource(&self) -> &str {
        &self.claim.resource
    }

    pub(crate) fn ttl(&self) -> Duration {
        self.claim.ttl
    }

    /// This hold's token, stored on the nodes.
    pub(crate) fn owner(&self) -> crate::protocol::token::OwnerToken {
        self.claim.token
    }

    /// The lock key on every node.
    pub(crate) fn key(&self) -> &str {
        self.claim.keys.lock_str()
    }

    pub(crate) fn deadline(&self) -> Instant {
        self.lease.deadline()
    }

    /// The nodes whose votes granted this hold, in the nodes' order.
    pub(crate) fn granted_by(&self) -> Vec<NodeId> {
        let ids = self.quorum.nodes.ids();
        ids.zip(&self.granted_by)
            .filter(|(_, granted)| **granted)
            .map(|(id, _)| id.clone())
            .collect()
    }

    pub(crate) fn lease(&self) -> LeaseWatch {
        LeaseWatch::new(Arc::clone(&self.lease))
    }

    /// Zero once the deadline passed or the lease was declared lost.
    pub(crate) fn validity(&self) -> Duration {
        self.lease().validity()
    }

    pub(crate) fn is_valid(&self) -> bool {
        self.lease().is_valid()
    }

    fn lost(&self) -> Error {
        Error::Lost {
            resource: self.claim.resource.clone(),
        }
    }

    /// Renews on a quorum; on failure the old deadline stands. A refusal
    /// declares the lease lost, and loss is final: once the deadline has
    /// passed or the lease was declared lost, this fails without sending.
    pub(crate) async fn extend(&mut self) -> Result<Duration, Error> {
        if self.lease.check_expired() {
            return Err(self.lost());
        }
        match self.quorum.extend(&self.claim).await {
            Ok(deadline) if self.lease.extended(deadline) => Ok(self.validity()),
            Ok(_) => Err(self.lost()),
            Err(error) => {
                if matches!(error, Error::NotHeld { .. }) {
                    self.lease.declare_lost(LostReason::NotHeld);
                }
                Err(error)
            }
        }
    }

    /// Starts the watchdog, unless it runs already or the lease is lost.
    pub(crate) fn auto_extend(&mut self) {
        let running = self.watchdog.as_ref().is_some_and(|w| !w.is_finished());
        if running || self.lease.check_expired() {
            return;
        }
        let extender = Extender {
            quorum: Arc::clone(&self.quorum),
            claim: Arc::clone(&self.claim),
        };
        self.watchdog = Some(Watchdog::spawn(
            extender,
            Arc::clone(&self.lease),
            self.watchdog_options,
        ));
    }

    /// The fencing token: on the first call, proposed by a quorum that still
    /// holds (unless the acquire proposed it: `eager_fence`) and written
    /// back to a quorum, both owner-checked (protocol/fence.rs has why that
    /// is safe); then the same token.
    pub(crate) async fn fence(&self) -> Result<FenceToken, Error> {
        let granted_by = &self.granted_by;
        let Fencing::On {
            proposal,
            asked,
            token,
        } = &self.fencing
        else {
            return Err(Error::FencingOff {
                resource: self.claim.resource.clone(),
            });
        };
        asked.store(true, Ordering::Relaxed);
        if self.lease.check_expired() {
            return Err(self.lost());
        }
        let issued = token
            .get_or_try_init(|| async {
                let highest = match proposal {
                    Some(highest) => Ok(*highest),
                    None => self.quorum.propose(&self.claim, granted_by).await,
                };
                // Scripts return integers; a negative one would mean a corrupt counter.
                let token = highest.map(|h| FenceToken::new(u64::try_from(h).unwrap_or(0)));
                let committed = match token {
                    Ok(token) => {
                        let committed = self.quorum.commit(&self.claim, token, granted_by);
                        committed.await.map(|()| token)
                    }
                    Err(error) => Err(error),
                };
                if matches!(committed, Err(Error::NotHeld { .. })) {
                    self.lease.declare_lost(LostReason::NotHeld);
                }
                committed
            })
            .await;
        match issued {
            // A token is only for a holder: not past the deadline.
            Ok(token) if !self.lease.check_expired() => Ok(*token),
            Ok(_) | Err(Error::NotHeld { .. }) => Err(self.lost()),
            Err(error) => Err(error),
        }
    }

    /// Releases on every node; returns on how many it was released. Stops
    /// the watchdog first (awaiting any extension in flight), so no
    /// extension follows the release.
    /// Owner-checked: stores `meta` as the hold's owner information on a
    /// quorum (an elected leader's new value).
    pub(crate) async fn set_meta(&self, meta: &str) -> Result<(), Error> {
        if self.lease.check_expired() {
            return Err(self.lost());
        }
        let result = self.quorum.set_meta(&self.claim, meta).await;
        if matches!(result, Err(Error::NotHeld { .. })) {
            self.lease.declare_lost(LostReason::NotHeld);
        }
        result
    }

    pub(crate) async fn release(&mut self) -> Result<usize, Error> {
        crate::metrics::validity_at_release(self.validity());
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.stop().await;
        }
        let released = self.quorum.release(&self.claim).await;
        self.disarm();
        self.lease.declare_lost(LostReason::Released);
        released
    }

    /// Carries `token` over from the hold this one was moved from (a lease
    /// ticket): the same fencing token, issued already, with no round.
    pub(crate) fn carry_fence(&mut self, token: FenceToken) {
        let asked = match &self.fencing {
            Fencing::On { asked, .. } => Arc::clone(asked),
            Fencing::Off => Arc::new(AtomicBool::new(true)),
        };
        self.fencing = Fencing::On {
            proposal: None,
            asked,
            token: OnceCell::new_with(Some(token)),
        };
    }

    /// This hold as a lease ticket (its kind must be one tickets name:
    /// `Lock`, `Write`).
    pub(crate) fn ticket(&self) -> Ticket {
        let kind = self.claim.kind;
        let (owner, fence) = (self.owner(), self.issued_fence());
        Ticket::new(kind, self.resource(), owner, fence, self.validity())
    }

    /// This hold as a lease ticket, let go of here without releasing (the
    /// watchdog stops): its lease runs until an adopter takes it over.
    pub(crate) fn let_go_as_ticket(&mut self) -> Ticket {
        let ticket = self.ticket();
        self.forget();
        ticket
    }

    /// The fencing token, if it was issued (asked for) already.
    pub(crate) fn issued_fence(&self) -> Option<FenceToken> {
        match &self.fencing {
            Fencing::On { token, .. } => token.get().copied(),
            Fencing::Off => None,
        }
    }

    /// Resolves when someone asks this hold's holders to let go; owns what
    /// it listens with.
    pub(crate) fn release_asked(&self) -> impl Future<Output = ()> + Send + 'static + use<> {
        let (quorum, key) = (Arc::clone(&self.quorum), self.key().to_owned());
        async move { quorum.ask_heard(&key).await }
    }

    /// Leaves the hold to expire; the watchdog (if any) stops at its next pause.
    pub(crate) fn forget(&mut self) {
        self.disarm();
        self.watchdog = None;
    }

    fn disarm(&mut self) {
        self.armed = false;
        self.holds.remove(self.registration);
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Dropping `self.watchdog` (a field) stops its task at its next pause.
        if self.armed {
            self.disarm();
            self.lease.declare_lost(LostReason::Released);
            // Never block in Drop: spawn the release on the Redlock's runtime
            // (if it has shut down, nothing runs and the hold expires).
            self.quorum.spawn_on_all(self.claim.release());
        }
    }
}
