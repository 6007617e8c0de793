//! The one way a workload drives a lock library: the [`Locker`] trait, what
//! a grant hands back ([`Grant`], in `grant.rs`), what a hand-over did
//! ([`HandOver`]) and why an acquire was refused ([`Refusal`]).
//!
//! Every driver of a lock goes through it: the torture workload
//! (`workload.rs`, `redquorum torture`, the scenario tests) and the
//! benchmarks (`redquorum bench`, the side-by-side bench). The lock
//! libraries' adapters live with the benchmarks (`redquorum-benches`: redquorum,
//! the raw floor; rslock in the side-by-side bench), because this crate cannot
//! depend on the library, which dev-depends on it for its doc tests.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use super::grant::Grant;
use super::store::ProtectedStore;
use crate::evidence::{History, Session};

/// What [`Locker::hand_over`] did with a hold.
///
/// # Examples
///
/// ```
/// let kept: redquorum_harness::HandOver<()> = redquorum_harness::HandOver::Kept(());
/// assert!(matches!(kept, redquorum_harness::HandOver::Kept(())));
/// ```
#[derive(Debug)]
pub enum HandOver<H> {
    /// Handed over: the lease ticket, for [`Locker::adopt`].
    Ticket(String),
    /// Not handed over (this lock, or this kind of hold, cannot be): the
    /// hold, given back to its holder.
    Kept(H),
}

/// Why an acquire was not granted: a short `kind` that reports group by
/// (`"contended"`, `"unavailable"`, `"expired"`, `"other"`) and the
/// library's own message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The kind of refusal, one word.
    pub kind: &'static str,
    /// The library's message.
    pub message: String,
}

impl Refusal {
    /// A refusal of `kind` with the library's `message`.
    ///
    /// # Examples
    ///
    /// ```
    /// let refusal = redquorum_harness::Refusal::new("contended", "taken on 3 of 5 nodes");
    /// assert_eq!(refusal.to_string(), "contended: taken on 3 of 5 nodes");
    /// ```
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Refusal {}

/// A request to let go, as [`Locker::release_asked`] listens for it.
pub type Asked = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A lock library as a workload drives it: take a resource (waiting, the
/// library's way, while another holds it) and give it back.
///
/// # Examples
///
/// A toy lock (one process, no expiry) shows the shape:
///
/// ```
/// use std::time::{Duration, Instant};
/// use redquorum_harness::{Grant, Locker, Refusal};
///
/// struct Local(tokio::sync::Mutex<()>);
/// impl Locker for Local {
///     type Held = ();
///     async fn acquire(&self, _resource: &str) -> Result<Grant<()>, Refusal> {
///         Ok(Grant::new((), "me".into(), Instant::now() + Duration::from_secs(60)))
///     }
///     async fn release(&self, _held: ()) -> Result<(), String> {
///         Ok(())
///     }
/// }
/// assert!(Local(Default::default()).client_commands().is_empty());
/// ```
pub trait Locker: Send + Sync + 'static {
    /// The held lock.
    type Held: Send + 'static;

    /// One acquire, with whatever waiting and retrying the library does.
    ///
    /// # Errors
    ///
    /// The lock was not granted.
    ///
    /// # Cancel safety
    ///
    /// The workloads never drop it mid-way.
    fn acquire(
        &self,
        resource: &str,
    ) -> impl Future<Output = Result<Grant<Self::Held>, Refusal>> + Send;

    /// Extends the lease; returns the new deadline. By default unsupported
    /// (an extending holder of the torture workload then never writes).
    ///
    /// # Errors
    ///
    /// The lease could not be extended (it is lost).
    ///
    /// # Cancel safety
    ///
    /// The workloads never drop it mid-way.
    fn extend(
        &self,
        held: &mut Self::Held,
    ) -> impl Future<Output = Result<Instant, Refusal>> + Send {
        let _ = held;
        async { Err(Refusal::new("other", "extend unsupported")) }
    }

    /// The hold's deadline now, as the lock's own renewal moved it (a
    /// [`Grant::kept`] hold), or the present instant once the lock declared
    /// the lease lost. `None`, the default: not known (a kept grant is
    /// then held to its first deadline).
    fn deadline(&self, held: &Self::Held) -> Option<Instant> {
        let _ = held;
        None
    }

    /// When the lock's last renewal of a [`Grant::kept`] hold was sent, at
    /// the earliest (its lease was counted from then). `None`, the default:
    /// not known (a renewal is then taken as sent when the holder saw its
    /// deadline move, which may be after an operator's force-release that
    /// it preceded).
    fn renewal_sent(&self, held: &Self::Held) -> Option<Instant> {
        let _ = held;
        None
    }

    /// A future that resolves when someone asks the holders of a
    /// [`Grant::kept`] hold to let go (the operator's ask, [`TortureOperator::ask_release`](crate::TortureOperator::ask_release)),
    /// owning what it listens with; `None`, the default: the lock has no
    /// such request (its holders then work their jobs to the end).
    fn release_asked(&self, held: &Self::Held) -> Option<Asked> {
        let _ = held;
        None
    }

    /// Releases what `acquire` granted. The torture workload records when
    /// it returned `Ok` (`Session::released`), and the checker then takes
    /// the lock as free on enough nodes that no one can be reported holding
    /// it any more: an adapter for a history returns `Ok` only for a
    /// release so confirmed (for a quorum lock, removed from a quorum).
    ///
    /// # Errors
    ///
    /// The library's message (or too few nodes confirmed it); the key is
    /// then left to its TTL.
    ///
    /// # Cancel safety
    ///
    /// The workloads never drop it mid-way.
    fn release(&self, held: Self::Held) -> impl Future<Output = Result<(), String>> + Send;

    /// Hands `held` over: a lease ticket that another task may take over
    /// with [`Locker::adopt`], the holder stopping its use of the lock
    /// here. [`HandOver::Kept`], the default: this lock (or this kind of
    /// hold) cannot be handed over, and the holder keeps it.
    fn hand_over(&self, held: Self::Held) -> HandOver<Self::Held> {
        HandOver::Kept(held)
    }

    /// Takes over the hold of a [`Locker::hand_over`] ticket: a grant to a
    /// new owner, carrying the old holder's fencing token. Of several
    /// adopters of one ticket at most one may be granted.
    ///
    /// # Errors
    ///
    /// The hold was not taken over (gone, adopted by another, or too few
    /// nodes answered). By default: unsupported.
    ///
    /// # Cancel safety
    ///
    /// The workloads never drop it mid-way.
    fn adopt(
        &self,
        ticket: &str,
    ) -> impl Future<Output = Result<Grant<Self::Held>, Refusal>> + Send {
        let _ = ticket;
        async { Err(Refusal::new("other", "hand-over unsupported")) }
    }

    /// Runs this session outside the workload, when the locker decides
    /// to: holders in other processes that the workload only watches (a
    /// command under `redquorum exec`; a pipeline's `redquorum lock`, then
    /// the `exec` that adopts its ticket), returned in order as recorded on
    /// `history`'s clock (the client fills in its client and group); their
    /// critical sections read and write `store`.
    /// Empty, the default: the workload acquires, uses and releases
    /// itself.
    ///
    /// # Cancel safety
    ///
    /// The workloads never drop it mid-way.
    fn outside(
        &self,
        resource: &str,
        history: &History,
        store: &ProtectedStore,
    ) -> impl Future<Output = Vec<Session>> + Send {
        let _ = (resource, history, store);
        async { Vec::new() }
    }

    /// Ends the lock client once its group's clients are done, on the
    /// group's runtime, before that runtime stops (`run_workload_groups`).
    /// A library that finishes work in the background (a release returns
    /// at a quorum; its stragglers still owe the slower nodes) lets it land
    /// here: a stopped runtime cuts it, and the key outlives its release
    /// (an orphan-key finding the library did not cause). Default: nothing.
    ///
    /// # Cancel safety
    ///
    /// The workloads never drop it mid-way.
    fn close(&self) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// The commands this library sends itself, as `INFO commandstats` names
    /// them (the benchmarks count requests per cycle with them; everything
    /// else seen there ran inside its scripts). Default: none.
    fn client_commands(&self) -> &'static [&'static str] {
        &[]
    }
}
