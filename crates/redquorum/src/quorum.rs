//! The quorum coordinator: fan one script out to every node at once, decide
//! early, and unwind on every node when an acquisition fails.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fred::types::ConnectHandle;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::OnceCell;
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::node::{Node, NodeId};
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
    drift_factor: f64,
    /// Set once the first connection attempt to every node has settled.
    connected: OnceCell<()>,
    /// Bound on that first wait, so a hung node cannot stall the first call.
    connect_timeout: Duration,
}

impl Quorum {
    /// Starts every node's connection task (requires a Tokio runtime).
    pub(crate) fn connect(nodes: Vec<Node>, drift_factor: f64, connect_timeout: Duration) -> Self {
        let nodes: Vec<Arc<Node>> = nodes.into_iter().map(Arc::new).collect();
        let script_loaders = nodes.iter().map(Node::spawn_script_loader).collect();
        let connections = nodes.iter().map(|node| node.connect()).collect();
        Self {
            nodes,
            connections,
            script_loaders,
            drift_factor,
            connected: OnceCell::new(),
            connect_timeout,
        }
    }

    /// Waits, on first use only, until every node's first connection attempt
    /// succeeded or failed (at most `connect_timeout`). Without it the first
    /// calls would sit in fred's queue during the handshake and time out.
    async fn first_connect(&self) {
        self.connected
            .get_or_init(|| async {
                // Load the scripts here too, so the first calls do not race the loader task.
                let attempts = self.nodes.iter().map(|node| async move {
                    node.wait_connected().await;
                    node.load_scripts().await;
                });
                let _ =
                    tokio::time::timeout(self.connect_timeout, futures::future::join_all(attempts))
                        .await;
            })
            .await;
    }

    pub(crate) fn node_ids(&self) -> impl Iterator<Item = &NodeId> {
        self.nodes.iter().map(|node| node.id())
    }

    /// The nodes, for protocols built on top of the lock (fencing).
    pub(crate) fn nodes(&self) -> &[Arc<Node>] {
        &self.nodes
    }

    pub(crate) fn quorum(&self) -> usize {
        tally::quorum(self.nodes.len())
    }

    /// One Redlock acquisition (DESIGN §2): send to all, decide early, check
    /// validity, and unwind everywhere on failure.
    ///
    /// Cancel safety: if dropped after the first poll, a guard spawns the
    /// unwind on every node.
    pub(crate) async fn acquire(
        self: &Arc<Self>,
        resource: &str,
        key: &str,
        owner: OwnerToken,
        ttl: Duration,
    ) -> Result<Lease, Error> {
        self.first_connect().await;
        let start = Instant::now();
        let mut guard = UnwindGuard {
            quorum: Some(Arc::clone(self)),
            key,
            owner,
        };
        let (decision, outcomes) = self.gather(|node| node.acquire(key, owner, ttl)).await;
        let elapsed = start.elapsed();
        if decision == Decision::Won {
            if let Some(validity) = validity::validity(ttl, elapsed, self.drift_factor) {
                guard.disarm();
                return Ok(Lease {
                    deadline: start + validity,
                });
            }
        }
        // Stragglers' acquires were sent on the same connection before this
        // unwind, so a late SET is always followed by our DEL.
        self.unwind(key, owner, &outcomes).await;
        guard.disarm();
        let resource = resource.to_owned();
        Err(match decision {
            Decision::Won => Error::Expired {
                resource,
                elapsed,
                ttl,
            },
            Decision::Unavailable => Error::Unavailable {
                resource,
                outcomes: self.outcomes(outcomes),
            },
            Decision::Contended | Decision::Pending => Error::Contended {
                resource,
                outcomes: self.outcomes(outcomes),
            },
        })
    }

    /// Owner-checked extension on a quorum; the new deadline counts from before the first send.
    pub(crate) async fn extend(
        &self,
        resource: &str,
        key: &str,
        owner: OwnerToken,
        ttl: Duration,
    ) -> Result<Lease, Error> {
        self.first_connect().await;
        let start = Instant::now();
        let (decision, outcomes) = self.gather(|node| node.extend(key, owner, ttl)).await;
        let elapsed = start.elapsed();
        let resource = resource.to_owned();
        match decision {
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
            Decision::Contended | Decision::Pending => Err(Error::NotHeld {
                resource,
                outcomes: self.outcomes(outcomes),
            }),
        }
    }

    /// Owner-checked delete on every node; returns how many nodes deleted our key.
    pub(crate) async fn release(
        &self,
        resource: &str,
        key: &str,
        owner: OwnerToken,
    ) -> Result<usize, Error> {
        let outcomes: Vec<NodeOutcome> =
            futures::future::join_all(self.nodes.iter().map(|node| node.release(key, owner))).await;
        let released = outcomes.iter().filter(|o| o.is_acquired()).count();
        if released > 0 {
            return Ok(released);
        }
        let taken = outcomes.iter().filter(|o| o.is_taken()).count();
        let resource = resource.to_owned();
        let outcomes = self.outcomes(outcomes);
        if taken >= self.quorum() {
            Err(Error::NotHeld { resource, outcomes })
        } else {
            Err(Error::Unavailable { resource, outcomes })
        }
    }

    /// Sends the release script to every node that might hold our key: all
    /// but those that answered `Taken` (another owner's key, ours never set).
    async fn unwind(&self, key: &str, owner: OwnerToken, outcomes: &[NodeOutcome]) {
        let calls = self
            .nodes
            .iter()
            .zip(outcomes)
            .filter(|(_, outcome)| !outcome.is_taken())
            .map(|(node, _)| node.release(key, owner));
        for outcome in futures::future::join_all(calls).await {
            if outcome.is_failure() {
                tracing::debug!(%outcome, "unwind did not reach a node; the key expires with its ttl");
            }
        }
    }

    /// Runs `call` on every node concurrently and stops at the first definite decision.
    /// Nodes that had not answered by then are `Unanswered`.
    async fn gather<'a, F, Fut>(&'a self, call: F) -> (Decision, Vec<NodeOutcome>)
    where
        F: Fn(&'a Arc<Node>) -> Fut,
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
                let reply = call(node);
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
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let quorum = Arc::clone(self);
            runtime.spawn(async move {
                let calls = quorum.nodes.iter().map(|node| node.release(&key, owner));
                futures::future::join_all(calls).await;
            });
        }
    }
}

impl Drop for Quorum {
    fn drop(&mut self) {
        // Stop the reconnect loops: no Redlock or Lock can use these clients any more.
        self.connections.iter().for_each(|task| task.abort());
        self.script_loaders.iter().for_each(|task| task.abort());
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
