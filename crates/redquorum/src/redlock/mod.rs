//! `Redlock`: the cheap-to-clone handle that takes locks. The handles
//! derived from one (other options, watchdog, owner information, an
//! attempt observer) are in `derived.rs`.

mod derived;
mod holders;

pub(crate) use holders::Holders;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::attempt::{Attempt, AttemptObserver};
use crate::error::Error;
use crate::lease::held::Held;
use crate::lease::registry::Registry;
use crate::lease::ticket::Ticket;
use crate::node_id::NodeId;
use crate::options::{LockOptions, WatchdogOptions};
use crate::protocol::claim::{Claim, Kind};
use crate::protocol::keys::{self, ResourceKeys};
use crate::protocol::token::OwnerToken;
use crate::quorum::coordinator::{Grant, Quorum};
use crate::wait::notify::Notifier;
use crate::wait::retry::Wait;

/// A handle to N independent Redis masters that takes distributed locks.
///
/// Cloning is cheap (an `Arc` inside); clones share the connections.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// # let urls = cluster.urls();
/// use redquorum::Redlock;
///
/// let redlock = Redlock::builder().nodes(&urls).build()?;
/// let lock = redlock.lock("reports:nightly").await?;
/// // ... the critical section, finished before lock.deadline() ...
/// lock.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Redlock {
    quorum: Arc<Quorum>,
    /// Prefix of every key (protocol/keys.rs has the layout).
    key_prefix: Arc<str>,
    node_timeout: Duration,
    options: LockOptions,
    /// How `Lock::auto_extend` and `with_lock` extend locks taken here.
    watchdog: WatchdogOptions,
    /// Owner information stored with every hold taken here (encoded).
    owner_info: Option<Arc<str>>,
    /// The live holds taken here and by clones, for `shutdown`.
    holds: Arc<Registry>,
    /// Told of every acquisition attempt before it is sent.
    attempts: Option<AttemptObserver>,
    /// Set once a lock taken here (or by a clone) asked for its fencing
    /// token: acquires then propose one (`LockOptions::eager_fence`).
    tokens_asked: Arc<AtomicBool>,
}

impl Redlock {
    pub(crate) fn new(
        quorum: Arc<Quorum>,
        key_prefix: Arc<str>,
        node_timeout: Duration,
        options: LockOptions,
    ) -> Self {
        Self {
            quorum,
            key_prefix,
            node_timeout,
            options,
            watchdog: WatchdogOptions::default(),
            owner_info: None,
            holds: Arc::default(),
            attempts: None,
            tokens_asked: Arc::default(),
        }
    }

    /// The watchdog options for locks taken with this handle.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.watchdog().max_extensions, None);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn watchdog(&self) -> &WatchdogOptions {
        &self.watchdog
    }

    /// The options this handle locks with.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.options().ttl, std::time::Duration::from_secs(10));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn options(&self) -> &LockOptions {
        &self.options
    }

    /// The nodes, in configured order.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.nodes().count(), 3);
    /// # Ok(()) }
    /// ```
    pub fn nodes(&self) -> impl Iterator<Item = &NodeId> {
        self.quorum.nodes().ids()
    }

    /// How many nodes an operation needs: `N/2 + 1`.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(5)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.quorum(), 3);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn quorum(&self) -> usize {
        self.quorum.quorum()
    }

    /// Every node's health as of its last probe (role, persistence, eviction
    /// policy, uptime, and whether its votes are refused now). Waits for the
    /// first connection attempts on first use; never probes itself.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads cached state.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// for (node, health) in redlock.health().await {
    ///     println!("{node}: {health}"); // "master, not durable, maxmemory-policy noeviction, uptime 3s"
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn health(&self) -> Vec<(NodeId, crate::health::node_health::NodeHealth)> {
        self.quorum.nodes().health().await
    }

    /// The Redis key that holds `resource`'s lock on every node, whatever
    /// the lock kind: the prefix, then the name in braces with `%`, `{` and
    /// `}` percent-encoded, so no resource name can reach another's keys
    /// (docs/safety.md).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.key("orders:42"), "lock:{orders:42}");
    /// assert_eq!(redlock.key("a}b"), "lock:{a%7Db}");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn key(&self, resource: &str) -> String {
        keys::lock_key(&self.key_prefix, resource)
    }

    /// The Redis key of `resource`'s fence counter on every node: the lock
    /// key followed by `:fence`, shared by every lock kind.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.fence_key("orders:42"), "lock:{orders:42}:fence");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn fence_key(&self, resource: &str) -> String {
        let keys = self.resource_keys(resource);
        keys.fence.as_str().unwrap_or_default().to_owned()
    }
}

/// What the lock kinds share: claims, taking them, waiting for them.
impl Redlock {
    /// A claim of `kind` on `resource` with a fresh token, for this handle's TTL.
    pub(crate) fn claim(&self, kind: Kind, resource: &str) -> Result<Claim, Error> {
        self.claim_with(kind, resource, OwnerToken::random())
    }

    /// A claim of `kind` on `resource` with `token` (a waiting writer keeps
    /// one token across its attempts).
    pub(crate) fn claim_with(
        &self,
        kind: Kind,
        resource: &str,
        token: OwnerToken,
    ) -> Result<Claim, Error> {
        if resource.is_empty() {
            return Err(Error::EmptyResource);
        }
        let keys = self.resource_keys(resource);
        let claim = Claim::new(kind, resource, keys, token, self.options.ttl)
            .with_delay(self.options.lock_delay);
        Ok(match &self.owner_info {
            Some(info) => claim.with_meta(info),
            None => claim,
        })
    }

    /// The keys of `resource` on every node.
    pub(crate) fn resource_keys(&self, resource: &str) -> ResourceKeys {
        ResourceKeys::new(&self.key_prefix, resource)
    }

    /// One attempt at `claim` on the quorum: the hold, or why not (every
    /// node that might hold it was sent an unwind).
    pub(crate) async fn take(&self, claim: Claim) -> Result<Held, Error> {
        if let Some(observer) = &self.attempts {
            observer.observe(&Attempt::new(
                &claim.resource,
                claim.kind.name(),
                claim.token,
            ));
        }
        let claim = Arc::new(claim);
        // A token proposed in the acquire saves `fence()` a round trip; only
        // handles whose locks ask for tokens pay for the proposal.
        let fencing = self.options.fencing.then(|| Arc::clone(&self.tokens_asked));
        let proposing = fencing.is_some()
            && (self.options.eager_fence || self.tokens_asked.load(Ordering::Relaxed));
        let grant = self.quorum.acquire(&claim, proposing).await?;
        let (quorum, holds, options) = (&self.quorum, &self.holds, self.watchdog);
        Ok(Held::new(quorum, holds, claim, grant, fencing, options))
    }

    /// Moves the hold of `ticket`'s owner to a fresh claim on a quorum (see
    /// [`Redlock::adopt`]): the hold, with the ticket's fencing token
    /// carried over; this handle's holds of the old owner are lost.
    pub(crate) async fn adopt_hold(&self, kind: Kind, ticket: &Ticket) -> Result<Held, Error> {
        let claim = self.ticket_claim(kind, ticket, OwnerToken::random())?;
        let claim = Arc::new(claim.adopting(ticket.owner, ticket.valid_until()));
        let grant = self.quorum.adopt(&claim, ticket.owner).await?;
        self.holds.moved(ticket.owner);
        Ok(self.ticket_held(claim, grant, ticket))
    }

    /// A handle on the hold of `ticket`'s owner, as that owner (see
    /// [`Redlock::resume`]), confirmed and renewed by an owner-checked
    /// extension on a quorum.
    pub(crate) async fn resume_hold(&self, kind: Kind, ticket: &Ticket) -> Result<Held, Error> {
        let claim = Arc::new(self.ticket_claim(kind, ticket, ticket.owner)?);
        let grant = self.quorum.resume(&claim).await?;
        Ok(self.ticket_held(claim, grant, ticket))
    }

    /// Releases `ticket`'s hold of `kind` where its owner still holds it.
    pub(crate) async fn release_ticket_hold(
        &self,
        kind: Kind,
        ticket: &Ticket,
    ) -> Result<usize, Error> {
        let claim = self.ticket_claim(kind, ticket, ticket.owner)?;
        self.quorum.release(&claim).await
    }

    /// A claim of `kind` on `ticket`'s resource with `token`. A ticket of
    /// another kind is refused before anything is sent.
    fn ticket_claim(&self, kind: Kind, ticket: &Ticket, token: OwnerToken) -> Result<Claim, Error> {
        if ticket.kind != kind {
            return Err(Error::TicketKind {
                resource: ticket.resource().to_owned(),
                ticket: ticket.kind(),
                asked: kind.name(),
            });
        }
        self.claim_with(kind, ticket.resource(), token)
    }

    /// The hold `grant`ed for `claim`, with `ticket`'s fencing token carried over.
    fn ticket_held(&self, claim: Arc<Claim>, grant: Grant, ticket: &Ticket) -> Held {
        let fencing = self.options.fencing.then(|| Arc::clone(&self.tokens_asked));
        let (quorum, holds, options) = (&self.quorum, &self.holds, self.watchdog);
        let mut held = Held::new(quorum, holds, claim, grant, fencing, options);
        if let Some(token) = ticket.fence() {
            held.carry_fence(token);
        }
        held
    }

    /// One attempt at a fresh claim of `kind` on `resource`.
    pub(crate) async fn hold(&self, kind: Kind, resource: &str) -> Result<Held, Error> {
        self.take(self.claim(kind, resource)?).await
    }

    /// Retries `attempt` at `resource` until it is acquired or the wait runs
    /// out, woken by releases of its lock (exclusive waiters take turns).
    pub(crate) async fn waiting<T, F, Fut>(
        &self,
        resource: &str,
        holders: Holders,
        attempt: F,
    ) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let key = self.key(resource);
        self.wait_for(vec![&key], holders)
            .until_acquired(resource, attempt)
            .await
    }

    /// How a blocking acquire of `lock_keys` waits between attempts.
    pub(crate) fn wait_for<'a>(&'a self, lock_keys: Vec<&'a str>, holders: Holders) -> Wait<'a> {
        Wait {
            options: &self.options,
            notifier: self.quorum.notifier(),
            keys: lock_keys,
            exclusive: holders.take_turns(),
            one_holder: holders.one_holder(),
        }
    }

    /// The shared coordinator.
    pub(crate) fn shared_quorum(&self) -> &Arc<Quorum> {
        &self.quorum
    }

    /// The live holds of this handle and its clones.
    pub(crate) fn holds(&self) -> &Registry {
        &self.holds
    }

    /// The release notifications (an election's observers wait on them).
    pub(crate) fn notifier(&self) -> &Arc<Notifier> {
        self.quorum.notifier()
    }

    /// The prefix of every key.
    pub(crate) fn key_prefix(&self) -> &str {
        &self.key_prefix
    }
}
