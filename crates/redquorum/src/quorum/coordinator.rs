//! The quorum coordinator: one fan-out for every operation of every kind.
//! An operation goes to all N nodes at once (`fan_out::gather`) and is
//! decided as early as possible; acquire, extend, release and the fencing
//! rounds differ only in the operation sent (protocol/claim.rs) and in how the votes
//! are settled. A failed acquisition is unwound on every node that may hold
//! its state, also when the caller stops waiting (a drop guard).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Instant;

use tokio::runtime::Handle;

use crate::error::Error;
use crate::node::nodes::Nodes;
use crate::node_error::NodeError;
use crate::node_id::NodeId;
use crate::protocol::claim::Claim;
use crate::protocol::fence::FenceToken;
use crate::protocol::op::Op;
use crate::protocol::token::OwnerToken;
use crate::quorum::drop_guard::DropGuard;
use crate::quorum::fan_out::{self, Until};
use crate::quorum::fence_choice;
use crate::quorum::hand_off_window::{HandOffWindow, JOIN_WITHIN};
use crate::quorum::settle::{Operation, Settle};
use crate::quorum::tally::Decision;
use crate::quorum::vote::Vote;
use crate::wait::notify::Notifier;

/// A won acquisition.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    /// `start + validity`: the holder must stop using the lock by then.
    pub(crate) deadline: Instant,
    /// The highest fencing proposal of the granting nodes, when a quorum of
    /// them proposed (proposing acquisitions only).
    pub(crate) proposal: Option<i64>,
    /// Which nodes (by index) granted before the decision: the fencing
    /// rounds count only them (protocol/fence.rs).
    pub(crate) granted_by: Vec<bool>,
}

/// The N independent masters as one coordinator, shared by every `Redlock`
/// clone and every held lock.
#[derive(Debug)]
pub(crate) struct Quorum {
    pub(crate) nodes: Nodes,
    pub(crate) drift_factor: f64,
    /// The runtime `build()` ran on: background work (drop-release, unwind,
    /// watchdog) is spawned here, so it never depends on the caller's thread.
    runtime: Handle,
    /// Wakes this process's waiters as soon as a release is on the wire.
    notifier: Arc<Notifier>,
    /// Set by `Redlock::shutdown`: no new operation is started.
    shut: AtomicBool,
}

impl Quorum {
    /// A coordinator over started nodes whose releases wake `notifier`'s
    /// waiters (requires a Tokio runtime).
    pub(crate) fn new(nodes: Nodes, drift_factor: f64, notifier: Arc<Notifier>) -> Self {
        Self {
            nodes,
            drift_factor,
            runtime: Handle::current(),
            notifier,
            shut: AtomicBool::new(false),
        }
    }

    /// The release notifications: the local waiters `release` wakes.
    pub(crate) fn notifier(&self) -> &Arc<Notifier> {
        &self.notifier
    }

    pub(crate) fn nodes(&self) -> &Nodes {
        &self.nodes
    }

    /// The runtime background tasks run on.
    pub(crate) fn runtime(&self) -> &Handle {
        &self.runtime
    }

    pub(crate) fn quorum(&self) -> usize {
        self.nodes.quorum()
    }

    /// Turns fan-outs' votes into results (quorum/settle.rs).
    pub(super) fn settling(&self) -> Settle<'_> {
        Settle {
            nodes: &self.nodes,
            drift_factor: self.drift_factor,
        }
    }

    /// Marks the coordinator shut down: later operations fail at once.
    pub(crate) fn shut_down(&self) {
        self.shut.store(true, Ordering::SeqCst);
    }

    pub(super) fn check_open(&self) -> Result<(), Error> {
        if self.shut.load(Ordering::SeqCst) {
            Err(Error::Shutdown)
        } else {
            Ok(())
        }
    }

    /// One Redlock acquisition (docs/algorithm.md): send to all, decide early, check
    /// validity, and unwind everywhere on failure. With `fenced`, granting
    /// nodes also propose a fencing token (protocol/fence.rs).
    ///
    /// Cancel safety: if dropped after the first poll, a guard spawns the
    /// unwind on every node (it queues behind the acquire on each connection).
    #[tracing::instrument(name = "redquorum.acquire", skip_all, fields(resource = %claim.resource, kind = claim.kind.name(), nodes = self.nodes.len(), result, elapsed_ms))]
    pub(crate) async fn acquire(
        self: &Arc<Self>,
        claim: &Arc<Claim>,
        fenced: bool,
    ) -> Result<Grant, Error> {
        self.take(claim, claim.acquire(fenced), fenced).await
    }

    /// Moves the hold of `old` to `claim` on a quorum (a lease ticket
    /// adopted), as an acquisition whose operation is the owner-checked
    /// move: decided early, validity checked, unwound everywhere on failure
    /// (where it moved, the hold goes back to `old`: `Claim::unwind` of a
    /// claim that is `adopting`). Of two adopters of one
    /// hold, at most one moves it on a quorum. A hold `old` no longer has
    /// on a quorum is `NotHeld`.
    #[tracing::instrument(name = "redquorum.adopt", skip_all, fields(resource = %claim.resource, kind = claim.kind.name(), nodes = self.nodes.len(), result, elapsed_ms))]
    pub(crate) async fn adopt(
        self: &Arc<Self>,
        claim: &Arc<Claim>,
        old: OwnerToken,
    ) -> Result<Grant, Error> {
        match self.take(claim, claim.move_from(old), false).await {
            Err(Error::Contended { resource, outcomes }) => {
                Err(Error::NotHeld { resource, outcomes })
            }
            taken => taken,
        }
    }

    /// Takes `claim` with `op` (an acquire, or a move): see [`Quorum::acquire`].
    async fn take(
        self: &Arc<Self>,
        claim: &Arc<Claim>,
        op: Op,
        fenced: bool,
    ) -> Result<Grant, Error> {
        self.check_open()?;
        self.nodes.first_connect().await;
        if let Some((node, shards)) = self.nodes.cross_shard(&op) {
            return Err(Error::CrossShard {
                resource: claim.resource.clone(),
                node,
                shards: shards.join(", "),
            });
        }
        let start = Instant::now();
        let guard = DropGuard::new({
            let (quorum, claim) = (Arc::clone(self), Arc::clone(claim));
            move || quorum.spawn_on_all(claim.unwind())
        });
        let (decision, votes) = fan_out::gather(&self.nodes, || op.clone(), Until::Decided).await;
        let elapsed = start.elapsed();
        if !self.settling().is_granted(decision, elapsed, claim.ttl) {
            // Stragglers' acquires were sent on the same connections before
            // this unwind, so a late grant is always followed by its undoing.
            self.unwind(claim, &votes, op.reaches_down_nodes()).await;
        }
        guard.disarm();
        let granted_by = votes.iter().map(|v| v.outcome.is_acquired()).collect();
        let proposal = fenced
            .then(|| {
                let proposals = votes.iter().map(|v| (&v.outcome, v.value));
                fence_choice::highest_proposal(proposals, self.quorum())
            })
            .flatten();
        let deadline =
            self.settling()
                .settle(Operation::Acquire, claim, decision, votes, start, elapsed)?;
        Ok(Grant {
            deadline,
            proposal,
            granted_by,
        })
    }

    /// Owner-checked extension on a quorum; returns the new deadline,
    /// counted from before the first send.
    #[tracing::instrument(name = "redquorum.extend", skip_all, fields(resource = %claim.resource, kind = claim.kind.name(), nodes = self.nodes.len(), result, elapsed_ms))]
    pub(crate) async fn extend(&self, claim: &Claim) -> Result<Instant, Error> {
        self.resume(claim).await.map(|grant| grant.deadline)
    }

    /// An owner-checked extension that makes a hold of `claim` (a lease
    /// ticket's, resumed by a new handle): its deadline, counted from before
    /// the first send, and the nodes that confirmed it (the fencing rounds
    /// count only them).
    pub(crate) async fn resume(&self, claim: &Claim) -> Result<Grant, Error> {
        self.check_open()?;
        self.nodes.first_connect().await;
        let start = Instant::now();
        let op = claim.extend();
        let (decision, votes) = fan_out::gather(&self.nodes, || op.clone(), Until::Decided).await;
        let elapsed = start.elapsed();
        let granted_by = votes.iter().map(|v| v.outcome.is_acquired()).collect();
        let deadline =
            (self.settling()).settle(Operation::Extend, claim, decision, votes, start, elapsed)?;
        Ok(Grant {
            deadline,
            proposal: None,
            granted_by,
        })
    }

    /// Owner-checked release on every node; returns on how many nodes our
    /// hold was removed by the time it returned: once a quorum confirmed
    /// it, the release returns, and the rest completes in the background,
    /// on each connection after what was sent before it (the batcher sends
    /// a release even when nobody waits for it; a `Redlock` that is dropped
    /// or shut down first lets those calls finish, node/nodes.rs). A node known
    /// to be down is sent the release without being waited for.
    ///
    /// With a local waiter on this lock, a hand-off window opens on every
    /// node: the release queues, the waiter woken here queues its acquire
    /// behind it, and both leave as one call per node when the window
    /// closes (closed on drop, so a cancelled release cannot hold it).
    #[tracing::instrument(name = "redquorum.release", skip_all, fields(resource = %claim.resource, kind = claim.kind.name(), nodes = self.nodes.len(), result, elapsed_ms))]
    pub(crate) async fn release(&self, claim: &Claim) -> Result<usize, Error> {
        let start = Instant::now();
        let key = claim.keys.lock_str();
        let notifier = self.notifier.has_waiters(key).then_some(&self.notifier);
        let window = notifier.map(|_| HandOffWindow::open(&self.nodes));
        let op = claim.release();
        let gather = fan_out::gather(&self.nodes, || op.clone(), Until::Won);
        let mut gather = std::pin::pin!(gather);
        // The first poll sends or queues the release on every node. A local
        // waiter woken now sends its acquire behind it on the same
        // connections, so it lands after our release: a hand-off in about
        // one round trip instead of release + notification + acquire.
        let first_poll = futures::poll!(gather.as_mut());
        // Sent: a caller of this process waiting to try may try now.
        self.notifier.released_here(key);
        let (_, votes) = match first_poll {
            Poll::Ready(answers) => answers,
            Poll::Pending => {
                let joining = notifier.and_then(|n| n.released_locally(key, claim.token));
                if let Some(window) = window {
                    // Until the woken head has queued its acquire (it may run
                    // on another thread), for at most JOIN_WITHIN: if it
                    // comes later, its acquire goes out as a call of its own.
                    match joining {
                        Some(joining) => drop(joining.attempt_sent(JOIN_WITHIN).await),
                        None => tokio::task::yield_now().await,
                    }
                    drop(window);
                }
                gather.await
            }
        };
        self.settling().settle_release(claim, votes, start)
    }

    /// Writes `token` back to a quorum of the nodes that granted the claim
    /// (`granted_by`), owner-checked: it lands only where the claim still
    /// holds (protocol/fence.rs has why).
    pub(crate) async fn commit(
        &self,
        claim: &Claim,
        token: FenceToken,
        granted_by: &[bool],
    ) -> Result<(), Error> {
        self.check_open()?;
        let op = claim.commit(token);
        let (decision, votes) =
            fan_out::gather_among(&self.nodes, || op.clone(), Until::Decided, Some(granted_by))
                .await;
        match decision {
            Decision::Won => Ok(()),
            Decision::Contended => Err(Error::NotHeld {
                resource: claim.resource.clone(),
                outcomes: self.settling().outcomes(votes),
            }),
            Decision::Unavailable | Decision::Pending => Err(Error::FenceUnavailable {
                resource: claim.resource.clone(),
                outcomes: self.settling().outcomes(votes),
            }),
        }
    }

    /// The highest fencing proposal of a quorum of the nodes that granted
    /// the claim (`granted_by`) and still hold it (owner-checked; `fence()`
    /// when the acquire proposed none).
    pub(crate) async fn propose(&self, claim: &Claim, granted_by: &[bool]) -> Result<i64, Error> {
        self.check_open()?;
        let op = claim.propose();
        let (decision, votes) =
            fan_out::gather_among(&self.nodes, || op.clone(), Until::Decided, Some(granted_by))
                .await;
        let highest = votes.iter().map(|v| v.value).max().unwrap_or(0);
        let (resource, outcomes) = (claim.resource.clone(), self.settling().outcomes(votes));
        match decision {
            Decision::Won => Ok(highest),
            Decision::Contended => Err(Error::NotHeld { resource, outcomes }),
            Decision::Unavailable | Decision::Pending => {
                Err(Error::FenceUnavailable { resource, outcomes })
            }
        }
    }

    /// Owner-checked: stores `meta` as the claim's owner information on a
    /// quorum (an elected leader's new value); observers are woken.
    pub(crate) async fn set_meta(&self, claim: &Claim, meta: &str) -> Result<(), Error> {
        self.check_open()?;
        let op = claim.set_meta(meta);
        let (decision, votes) = fan_out::gather(&self.nodes, || op.clone(), Until::Decided).await;
        let (resource, outcomes) = (claim.resource.clone(), self.settling().outcomes(votes));
        match decision {
            Decision::Won => Ok(()),
            Decision::Contended => Err(Error::NotHeld { resource, outcomes }),
            Decision::Unavailable | Decision::Pending => {
                Err(Error::Unavailable { resource, outcomes })
            }
        }
    }

    /// Runs a read-only `op` on every node; each node's raw answer.
    pub(crate) async fn read_all(
        &self,
        op: Op,
    ) -> Vec<(NodeId, Result<fred::types::Value, NodeError>)> {
        self.nodes.first_connect().await;
        let calls = self.nodes.iter().map(|node| {
            let op = op.clone();
            async move {
                let answer = node.run(op).await;
                (
                    node.id().clone(),
                    answer.map_err(|e| NodeError::new(node.id().clone(), e)),
                )
            }
        });
        futures::future::join_all(calls).await
    }

    /// Runs `op` on every node in the background (best effort): a release
    /// from a `Drop`, an unwind from a cancelled acquisition. Spawned on the
    /// Redlock's runtime, so it works from a thread without one.
    pub(crate) fn spawn_on_all(self: &Arc<Self>, op: Op) {
        let quorum = Arc::clone(self);
        self.runtime.spawn(async move {
            let calls = quorum.nodes.iter().map(|node| node.run(op.clone()));
            futures::future::join_all(calls).await;
        });
    }

    /// Undoes a failed attempt on every node that may hold its state: all
    /// but those that answered "taken", where it wrote nothing but (for a
    /// waiting writer) the intent it keeps for its next attempt, and those
    /// known down, where the attempt was not sent (unless it was:
    /// `sent_to_down`, a move).
    async fn unwind(&self, claim: &Claim, votes: &[Vote], sent_to_down: bool) {
        let op = claim.unwind();
        let calls = self
            .nodes
            .iter()
            .zip(votes)
            .filter(|(_, vote)| {
                !vote.outcome.is_taken() && (sent_to_down || !vote.outcome.is_down())
            })
            .map(|(node, _)| node.run(op.clone()));
        for answer in futures::future::join_all(calls).await {
            if let Err(error) = answer {
                tracing::debug!(%error, "unwind did not reach a node; the hold expires with its ttl");
            }
        }
    }
}
