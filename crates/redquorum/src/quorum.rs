//! The quorum coordinator: fan one script out to every node at once, decide
//! early, and unwind on every node when an acquisition fails.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use fred::types::ConnectHandle;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::runtime::Handle;
use tokio::sync::OnceCell;
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::mutants::{self, Mutant};
use crate::node::{Node, NodeId};
use crate::notify::Notifier;
use crate::outcome::{NodeOutcome, Outcomes};
use crate::tally::{self, Decision, Tally};
use crate::token::OwnerToken;
use crate::validity;

/// A granted lease: when it was asked for and how long it may be used.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lease {
    /// `start + validity`: the holder must stop using the lock by then.
    pub(crate) deadline: Instant,
}

/// The N independent masters, shared by every `Redlock` clone and `Lock`.
#[derive(Debug)]
pub(crate) struct Quorum {
    nodes: Vec<Arc<Node>>,
    connections: Vec<ConnectHandle>,
    script_loaders: Vec<JoinHandle<()>>,
    health_checkers: Vec<JoinHandle<()>>,
    drift_factor: f64,
    /// Set once the first connection attempt to every node has settled.
    connected: OnceCell<()>,
    /// Bound on that first wait, so a hung node cannot stall the first call.
    connect_timeout: Duration,
    /// Once a quorum has connected, how much longer the first wait gives the rest
    /// (a node that is down never reports its first connect: fred keeps retrying).
    stragglers_grace: Duration,
    /// The runtime `build()` ran on: background work (drop-release, watchdog)
    /// is spawned here, so it never depends on the caller's thread having a runtime.
    runtime: Handle,
    /// Wakes this process's waiters as soon as a release is on the wire.
    notifier: std::sync::OnceLock<Arc<Notifier>>,
}

impl Quorum {
    /// Starts every node's connection task (requires a Tokio runtime).
    pub(crate) fn connect(
        nodes: Vec<Node>,
        drift_factor: f64,
        connect_timeout: Duration,
        node_timeout: Duration,
    ) -> Self {
        let nodes: Vec<Arc<Node>> = nodes.into_iter().map(Arc::new).collect();
        let script_loaders = nodes.iter().map(Node::spawn_script_loader).collect();
        let health_checkers = nodes.iter().map(Node::spawn_health_checker).collect();
        let connections = nodes.iter().map(|node| node.connect()).collect();
        Self {
            nodes,
            connections,
            script_loaders,
            health_checkers,
            drift_factor,
            connected: OnceCell::new(),
            connect_timeout,
            stragglers_grace: node_timeout,
            runtime: Handle::current(),
            notifier: std::sync::OnceLock::new(),
        }
    }

    /// The notifier whose local waiters `release` wakes (set once, by the builder).
    pub(crate) fn set_notifier(&self, notifier: Arc<Notifier>) {
        let _ = self.notifier.set(notifier);
    }

    /// Waits, on first use only, until every node's first connection attempt
    /// succeeded or failed (at most `connect_timeout`). Without it the first
    /// calls would sit in fred's queue during the handshake and time out.
    async fn first_connect(&self) {
        self.connected
            .get_or_init(|| async {
                // Load the scripts here too, so the first calls do not race the loader task.
                // A node whose first connect failed is skipped: calls to it would only
                // wait out their timeouts here, and its reconnect loads the scripts.
                let mut attempts: FuturesUnordered<_> = self
                    .nodes
                    .iter()
                    .map(|node| async move {
                        let up = node.wait_connected().await;
                        if up {
                            node.load_scripts().await;
                            node.probe_health().await;
                        }
                        up
                    })
                    .collect();
                let mut deadline = tokio::time::Instant::now() + self.connect_timeout;
                let mut ready = 0;
                while let Ok(Some(up)) = tokio::time::timeout_at(deadline, attempts.next()).await {
                    ready += usize::from(up);
                    if ready == self.quorum() {
                        deadline =
                            deadline.min(tokio::time::Instant::now() + self.stragglers_grace);
                    }
                }
            })
            .await;
    }

    pub(crate) fn node_ids(&self) -> impl Iterator<Item = &NodeId> {
        self.nodes.iter().map(|node| node.id())
    }

    /// The runtime background tasks run on.
    pub(crate) fn runtime(&self) -> &Handle {
        &self.runtime
    }

    /// The nodes, for protocols built on top of the lock (fencing).
    pub(crate) fn nodes(&self) -> &[Arc<Node>] {
        &self.nodes
    }

    pub(crate) fn quorum(&self) -> usize {
        tally::quorum(self.nodes.len())
    }

    /// Every node's cached health (after the first connection attempts).
    pub(crate) async fn health(&self) -> Vec<(NodeId, crate::health::NodeHealth)> {
        self.first_connect().await;
        self.nodes
            .iter()
            .map(|node| (node.id().clone(), node.health()))
            .collect()
    }

    /// One Redlock acquisition (DESIGN §2): send to all, decide early, check
    /// validity, and unwind everywhere on failure.
    ///
    /// With a `fence_key`, each node that grants the lock also proposes a
    /// fencing token in the same call (fence.rs); the highest proposal among
    /// the granting nodes comes back with the lease, for the write-back
    /// (`None` if fewer than a quorum of them proposed).
    ///
    /// Cancel safety: if dropped after the first poll, a guard spawns the
    /// unwind on every node.
    #[tracing::instrument(name = "redquorum.acquire", skip_all, fields(resource = %resource, nodes = self.nodes.len(), result, elapsed_ms))]
    pub(crate) async fn acquire(
        self: &Arc<Self>,
        resource: &str,
        key: &str,
        owner: OwnerToken,
        ttl: Duration,
        fence_key: Option<&str>,
    ) -> Result<(Lease, Option<i64>), Error> {
        self.first_connect().await;
        let start = Instant::now();
        let mut guard = UnwindGuard {
            quorum: Some(Arc::clone(self)),
            key,
            owner,
        };
        // Filled by the nodes' fenced acquires; empty (no allocation) unfenced.
        let proposals: Vec<AtomicI64> = match fence_key {
            Some(_) => self.nodes.iter().map(|_| AtomicI64::new(0)).collect(),
            None => Vec::new(),
        };
        let (decision, outcomes) = self
            .gather(|index, node| {
                let proposals = &proposals;
                async move {
                    let Some(fence_key) = fence_key else {
                        return node.acquire(key, owner, ttl).await;
                    };
                    let (outcome, proposal) = node.acquire_fenced(key, fence_key, owner, ttl).await;
                    if let Some(proposal) = proposal {
                        proposals[index].store(proposal, Ordering::Relaxed);
                    }
                    outcome
                }
            })
            .await;
        let elapsed = start.elapsed();
        let highest = highest_proposal(&outcomes, &proposals, self.quorum());
        // Stragglers' acquires were sent on the same connection before this
        // unwind, so a late SET is always followed by our DEL.
        if !self.is_granted(decision, elapsed, ttl) && !mutants::is_active(Mutant::NoUnwind) {
            self.unwind(&outcomes, UnwindOn::NotTaken, |node| {
                node.release(key, owner)
            })
            .await;
        }
        guard.disarm();
        self.settle(
            Operation::Acquire,
            resource,
            decision,
            outcomes,
            start,
            elapsed,
            ttl,
        )
        .map(|lease| (lease, highest))
    }

    /// Owner-checked extension on a quorum; the new deadline counts from before the first send.
    #[tracing::instrument(name = "redquorum.extend", skip_all, fields(resource = %resource, nodes = self.nodes.len(), result, elapsed_ms))]
    pub(crate) async fn extend(
        &self,
        resource: &str,
        key: &str,
        owner: OwnerToken,
        ttl: Duration,
    ) -> Result<Lease, Error> {
        self.extend_on(resource, ttl, |node| node.extend(key, owner, ttl))
            .await
    }

    /// The extend fan-out shared by [`Quorum::extend`] and
    /// [`Quorum::extend_with`]: owner-checked, decided at quorum, the new
    /// deadline counted from before the first send.
    async fn extend_on<'a, F, Fut>(
        &'a self,
        resource: &str,
        ttl: Duration,
        call: F,
    ) -> Result<Lease, Error>
    where
        F: Fn(&'a Arc<Node>) -> Fut,
        Fut: Future<Output = NodeOutcome> + 'a,
    {
        self.first_connect().await;
        let start = Instant::now();
        let (decision, outcomes) = self.gather(|_, node| call(node)).await;
        let elapsed = start.elapsed();
        self.settle(
            Operation::Extend,
            resource,
            decision,
            outcomes,
            start,
            elapsed,
            ttl,
        )
    }

    /// Owner-checked delete on every node; returns how many nodes deleted our key.
    #[tracing::instrument(name = "redquorum.release", skip_all, fields(resource = %resource, nodes = self.nodes.len(), result, elapsed_ms))]
    pub(crate) async fn release(
        &self,
        resource: &str,
        key: &str,
        owner: OwnerToken,
    ) -> Result<usize, Error> {
        let start = Instant::now();
        // With a local waiter on this key, open a hand-off window on every
        // node: the release queues, the waiter woken below queues its
        // acquire behind it, and both leave as one call per node when the
        // window closes. Closed on drop, so a cancelled release cannot hold it.
        let notifier = (self.notifier.get()).filter(|n| n.has_waiters(key));
        let window = notifier.map(|_| HandOffWindow::open(&self.nodes));
        let calls =
            futures::future::join_all(self.nodes.iter().map(|node| node.release(key, owner)));
        let mut calls = std::pin::pin!(calls);
        // The first poll sends or queues the release on every node. A local
        // waiter woken now sends its acquire behind it on the same
        // connections, so it lands after our release: a hand-off in about
        // one round trip instead of release + notification + acquire.
        let outcomes: Vec<NodeOutcome> = match futures::poll!(calls.as_mut()) {
            std::task::Poll::Ready(outcomes) => outcomes,
            std::task::Poll::Pending => {
                if let Some(notifier) = notifier {
                    notifier.released_locally(key, owner);
                }
                if let Some(window) = window {
                    // Lets the woken waiter (scheduled next on this thread)
                    // queue its acquire before the window closes. If it runs
                    // later, its acquire simply goes out as a call of its own.
                    tokio::task::yield_now().await;
                    drop(window);
                }
                calls.await
            }
        };
        self.settle_release(resource, outcomes, start)
    }

    /// Sends `release` to every node that might hold our state: with
    /// [`UnwindOn::NotTaken`] all but those that answered `Taken` (another
    /// owner's key, ours never set), with [`UnwindOn::Every`] all of them.
    async fn unwind<'a, F, Fut>(&'a self, outcomes: &[NodeOutcome], on: UnwindOn, release: F)
    where
        F: Fn(&'a Arc<Node>) -> Fut,
        Fut: Future<Output = NodeOutcome> + 'a,
    {
        let calls = self
            .nodes
            .iter()
            .zip(outcomes)
            .filter(|(_, outcome)| on == UnwindOn::Every || !outcome.is_taken())
            .map(|(node, _)| release(node));
        for outcome in futures::future::join_all(calls).await {
            if outcome.is_failure() {
                tracing::debug!(%outcome, "unwind did not reach a node; the key expires with its ttl");
            }
        }
    }

    /// True when a fan-out ended in a quorum with validity left.
    fn is_granted(&self, decision: Decision, elapsed: Duration, ttl: Duration) -> bool {
        decision == Decision::Won && validity::validity(ttl, elapsed, self.drift_factor).is_some()
    }

    /// The result of a finished acquire or extend fan-out, recorded in the
    /// metrics and the operation's span. A lost acquire is `Contended`; a
    /// lost extend is `NotHeld` (our key is gone from too many nodes).
    #[allow(clippy::too_many_arguments)]
    fn settle(
        &self,
        operation: Operation,
        resource: &str,
        decision: Decision,
        outcomes: Vec<NodeOutcome>,
        start: Instant,
        elapsed: Duration,
        ttl: Duration,
    ) -> Result<Lease, Error> {
        trace_outcomes(&outcomes, &self.nodes, elapsed);
        let resource = resource.to_owned();
        let result = match decision {
            Decision::Won => match validity::validity(ttl, elapsed, self.drift_factor) {
                Some(validity) => Ok(Lease {
                    deadline: start + validity,
                }),
                None => Err(Error::Expired {
                    resource,
                    elapsed,
                    ttl,
                }),
            },
            Decision::Unavailable => Err(Error::Unavailable {
                resource,
                outcomes: self.outcomes(outcomes),
            }),
            Decision::Contended | Decision::Pending => {
                let outcomes = self.outcomes(outcomes);
                Err(match operation {
                    Operation::Acquire => Error::Contended { resource, outcomes },
                    Operation::Extend => Error::NotHeld { resource, outcomes },
                })
            }
        };
        let (ok_label, plain) = (operation.ok_label(), result.as_ref().map(|_| ()));
        match operation {
            Operation::Acquire => crate::observe::acquired(plain, elapsed),
            Operation::Extend => crate::observe::extended(plain),
        }
        record_result(
            result.as_ref().map_or_else(error_label, |_| ok_label),
            elapsed,
        );
        result
    }

    /// The result of a release on every node: how many deleted our key, or why none did.
    fn settle_release(
        &self,
        resource: &str,
        outcomes: Vec<NodeOutcome>,
        start: Instant,
    ) -> Result<usize, Error> {
        let elapsed = start.elapsed();
        trace_outcomes(&outcomes, &self.nodes, elapsed);
        let released = outcomes.iter().filter(|o| o.is_acquired()).count();
        let taken = outcomes.iter().filter(|o| o.is_taken()).count();
        let result = if released > 0 {
            Ok(released)
        } else {
            let (resource, outcomes) = (resource.to_owned(), self.outcomes(outcomes));
            if taken >= self.quorum() {
                Err(Error::NotHeld { resource, outcomes })
            } else {
                Err(Error::Unavailable { resource, outcomes })
            }
        };
        crate::observe::released(result.as_ref().map(|_| ()));
        record_result(
            result.as_ref().map_or_else(error_label, |_| "released"),
            elapsed,
        );
        result
    }

    /// Runs `call` on every node concurrently and stops at the first definite decision.
    /// Nodes that had not answered by then are `Unanswered`.
    async fn gather<'a, F, Fut>(&'a self, call: F) -> (Decision, Vec<NodeOutcome>)
    where
        F: Fn(usize, &'a Arc<Node>) -> Fut,
        Fut: Future<Output = NodeOutcome> + 'a,
    {
        let mut tally = Tally::new(self.nodes.len());
        let mut outcomes: Vec<NodeOutcome> =
            self.nodes.iter().map(|_| NodeOutcome::Unanswered).collect();
        let mut pending: FuturesUnordered<_> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(index, node)| {
                let reply = call(index, node);
                async move { (index, reply.await) }
            })
            .collect();
        let mut decision = Decision::Pending;
        while let Some((index, outcome)) = pending.next().await {
            tally.record(&outcome);
            outcomes[index] = outcome;
            decision = tally.decision();
            if decision != Decision::Pending {
                break;
            }
        }
        (decision, outcomes)
    }

    fn outcomes(&self, outcomes: Vec<NodeOutcome>) -> Outcomes {
        Outcomes::new(
            self.node_ids().cloned().zip(outcomes).collect(),
            self.quorum(),
        )
    }

    /// Best-effort release on every node in the background; used by `Drop`.
    pub(crate) fn spawn_release(self: &Arc<Self>, key: String, owner: OwnerToken) {
        let quorum = Arc::clone(self);
        self.runtime.spawn(async move {
            let calls = quorum.nodes.iter().map(|node| node.release(&key, owner));
            futures::future::join_all(calls).await;
        });
    }
}

/// Which nodes a failed acquisition is unwound on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnwindOn {
    /// All but those that answered `Taken`: the script wrote nothing there.
    NotTaken,
    /// Every node: the script may write even where it answers `Taken`
    /// (a waiting writer's intent).
    Every,
}

/// One script call on one node, owning its arguments, so it can also run in the background.
pub(crate) type NodeCall =
    Arc<dyn Fn(Arc<Node>) -> futures::future::BoxFuture<'static, NodeOutcome> + Send + Sync>;

/// The generic forms of `acquire`, `extend` and `release`, for lock kinds
/// whose per-node scripts differ (reentrant, read-write): same fan-out,
/// early decision, validity check and unwind on every node.
impl Quorum {
    /// As [`Quorum::acquire`], with the per-node `acquire` and `unwind` calls
    /// given, and the nodes a failure is unwound on.
    ///
    /// Cancel safety: if dropped after the first poll, a guard spawns `unwind` on every node.
    #[tracing::instrument(name = "redquorum.acquire", skip_all, fields(resource = %resource, nodes = self.nodes.len(), result, elapsed_ms))]
    pub(crate) async fn acquire_with(
        self: &Arc<Self>,
        resource: &str,
        ttl: Duration,
        acquire: NodeCall,
        unwind: NodeCall,
        unwind_on: UnwindOn,
    ) -> Result<Lease, Error> {
        self.first_connect().await;
        let start = Instant::now();
        let mut guard = CallGuard {
            quorum: Some(Arc::clone(self)),
            call: Arc::clone(&unwind),
        };
        // Votes pass the node's health gate, as in `acquire` (delayed restart, replicas).
        let (decision, outcomes) = self
            .gather(|_, node| {
                let reply = acquire(Arc::clone(node));
                async move { node.admit(reply.await) }
            })
            .await;
        let elapsed = start.elapsed();
        // As in `acquire`: the unwind follows each node's acquire on the same connection.
        if !self.is_granted(decision, elapsed, ttl) && !mutants::is_active(Mutant::NoUnwind) {
            self.unwind(&outcomes, unwind_on, |node| unwind(Arc::clone(node)))
                .await;
        }
        guard.disarm();
        self.settle(
            Operation::Acquire,
            resource,
            decision,
            outcomes,
            start,
            elapsed,
            ttl,
        )
    }

    /// As [`Quorum::extend`], with the per-node owner-checked `extend` call given.
    #[tracing::instrument(name = "redquorum.extend", skip_all, fields(resource = %resource, nodes = self.nodes.len(), result, elapsed_ms))]
    pub(crate) async fn extend_with(
        &self,
        resource: &str,
        ttl: Duration,
        extend: NodeCall,
    ) -> Result<Lease, Error> {
        // Votes pass the node's health gate, as the plain lock's extend does.
        self.extend_on(resource, ttl, |node| {
            let reply = extend(Arc::clone(node));
            async move { node.admit(reply.await) }
        })
        .await
    }

    /// As [`Quorum::release`], with the per-node owner-checked `release` call given.
    #[tracing::instrument(name = "redquorum.release", skip_all, fields(resource = %resource, nodes = self.nodes.len(), result, elapsed_ms))]
    pub(crate) async fn release_with(
        &self,
        resource: &str,
        release: NodeCall,
    ) -> Result<usize, Error> {
        let start = Instant::now();
        let calls = self.nodes.iter().map(|node| release(Arc::clone(node)));
        let outcomes: Vec<NodeOutcome> = futures::future::join_all(calls).await;
        self.settle_release(resource, outcomes, start)
    }

    /// Runs `call` on every node in the background (best effort); used by `Drop`s.
    /// Spawned on the Redlock's runtime, so it works from a thread without one.
    pub(crate) fn spawn_on_all(self: &Arc<Self>, call: NodeCall) {
        let quorum = Arc::clone(self);
        self.runtime.spawn(async move {
            let calls = quorum.nodes.iter().map(|node| call(Arc::clone(node)));
            futures::future::join_all(calls).await;
        });
    }
}

/// Spawns a call on every node if an acquisition is dropped mid-flight (cancel safety).
struct CallGuard {
    quorum: Option<Arc<Quorum>>,
    call: NodeCall,
}

impl CallGuard {
    fn disarm(&mut self) {
        self.quorum = None;
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Some(quorum) = self.quorum.take() {
            quorum.spawn_on_all(Arc::clone(&self.call));
        }
    }
}

impl Drop for Quorum {
    fn drop(&mut self) {
        // Stop the reconnect loops: no Redlock or Lock can use these clients any more.
        self.connections.iter().for_each(|task| task.abort());
        self.script_loaders.iter().for_each(|task| task.abort());
        self.health_checkers.iter().for_each(|task| task.abort());
    }
}

/// Which lease operation a fan-out was, for its result and metrics.
#[derive(Debug, Clone, Copy)]
enum Operation {
    Acquire,
    Extend,
}

impl Operation {
    fn ok_label(self) -> &'static str {
        match self {
            Operation::Acquire => "acquired",
            Operation::Extend => "extended",
        }
    }
}

/// Per-node outcomes, at debug level only: one line per operation, never one per node at info.
fn trace_outcomes(outcomes: &[NodeOutcome], nodes: &[Arc<Node>], elapsed: Duration) {
    if tracing::enabled!(tracing::Level::DEBUG) {
        let per_node: Vec<String> = nodes
            .iter()
            .zip(outcomes)
            .map(|(node, outcome)| format!("{}={outcome}", node.id()))
            .collect();
        tracing::debug!(outcomes = %per_node.join(", "), elapsed_ms = elapsed.as_millis() as u64, "node outcomes");
    }
}

/// Fills the current operation span's `result` and `elapsed_ms` fields.
fn record_result(result: &str, elapsed: Duration) {
    let span = tracing::Span::current();
    span.record("result", result);
    span.record("elapsed_ms", elapsed.as_millis() as u64);
}

/// A short result name for the span: the error's kind.
fn error_label(error: &Error) -> &'static str {
    match error {
        Error::Contended { .. } => "contended",
        Error::Unavailable { .. } => "unavailable",
        Error::Expired { .. } => "expired",
        Error::NotHeld { .. } => "not_held",
        _ => "error",
    }
}

/// The highest fencing proposal of the nodes that granted the lock, if a
/// quorum of them proposed (a node whose fence key is corrupt grants without
/// proposing). `None` for an unfenced attempt (no proposals).
fn highest_proposal(
    outcomes: &[NodeOutcome],
    proposals: &[AtomicI64],
    quorum: usize,
) -> Option<i64> {
    let (count, highest) = outcomes
        .iter()
        .zip(proposals)
        .filter(|(outcome, _)| outcome.is_acquired())
        .map(|(_, proposal)| proposal.load(Ordering::Relaxed))
        .filter(|&proposal| proposal > 0)
        .fold((0, 0), |(count, highest), proposal| {
            (count + 1, highest.max(proposal))
        });
    (count >= quorum).then_some(highest)
}

/// A hand-off window open on every node (see `Batcher::hold`), closed on drop.
struct HandOffWindow<'a> {
    nodes: &'a [Arc<Node>],
}

impl<'a> HandOffWindow<'a> {
    fn open(nodes: &'a [Arc<Node>]) -> Self {
        nodes.iter().for_each(|node| node.hold_batches());
        Self { nodes }
    }
}

impl Drop for HandOffWindow<'_> {
    fn drop(&mut self) {
        self.nodes.iter().for_each(Node::unhold_batches);
    }
}

/// Unwinds an acquisition whose future was dropped mid-flight (cancel safety).
struct UnwindGuard<'a> {
    quorum: Option<Arc<Quorum>>,
    key: &'a str,
    owner: OwnerToken,
}

impl UnwindGuard<'_> {
    fn disarm(&mut self) {
        self.quorum = None;
    }
}

impl Drop for UnwindGuard<'_> {
    fn drop(&mut self) {
        if let Some(quorum) = self.quorum.take() {
            quorum.spawn_release(self.key.to_owned(), self.owner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposals(values: &[i64]) -> Vec<AtomicI64> {
        values.iter().map(|&v| AtomicI64::new(v)).collect()
    }

    #[test]
    fn the_token_is_the_highest_proposal_of_the_granting_nodes_if_a_quorum_proposed() {
        use NodeOutcome::{Acquired, Taken, Unanswered};
        let granted = [Acquired, Acquired, Taken, Acquired, Unanswered];
        // A Taken or unanswered node's value does not count.
        let values = proposals(&[5, 9, 100, 7, 200]);
        assert_eq!(highest_proposal(&granted, &values, 3), Some(9));
        // A granting node without a proposal (corrupt fence key): 2 of 3 proposed.
        let values = proposals(&[5, 0, 100, 7, 200]);
        assert_eq!(highest_proposal(&granted, &values, 3), None);
        // Unfenced: no proposals at all.
        assert_eq!(highest_proposal(&granted, &[], 3), None);
    }
}
