//! Release notifications: the subscriber connections that wake local
//! waiters (wait/waiters.rs) when a holder releases, whatever the lock kind;
//! and on the same lines, keyed `<lock key>:<what>`, an election's news, a
//! lock's losses (`:lost`, which watchdogs hear) and asks (`:ask`).
//!
//! The release operation publishes the hold's token on
//! `redquorum:released:<lock key>` on every node where the lock became free
//! (`protocol/scripts/ops/`). One subscriber connection per node, shared by all
//! waiters of a `Redlock` and its clones, listens on the channels of the
//! locks someone here waits for: a channel is subscribed when the first
//! local waiter on its lock arrives and unsubscribed when the last one has
//! left (after a short linger, so a waiter that comes straight back does not
//! pay SUBSCRIBE + UNSUBSCRIBE).

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use fred::clients::SubscriberClient;
use fred::interfaces::{ClientLike, EventInterface};
use fred::types::ConnectHandle;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::protocol::keys::{self, CHANNEL_PREFIX};
use crate::protocol::token::OwnerToken;
use crate::sync::lock;
use crate::wait::channels;
use crate::wait::first_try::{FirstTries, Passed};
use crate::wait::waiters::{Joining, Lines, Waiter};

/// How long an empty line (and its channel subscription) is kept. A waiter
/// that comes back within it (two workers taking turns, say) neither pays
/// SUBSCRIBE + UNSUBSCRIBE nor a blind attempt against the lock its
/// predecessor just won: it waits for that holder's release.
const LINGER: Duration = Duration::from_secs(1);

/// Every node's subscriber connection and the lines of local waiters.
///
/// The connections are opened on first use only (a waiter, a watchdog
/// listening for its lock's loss, a holder listening for asks): a
/// `Redlock` that does none of these never opens them.
pub(crate) struct Notifier {
    shared: Arc<Shared>,
    /// Exclusive waiters' first attempts on one key, one at a time.
    first_tries: FirstTries,
    /// Taken by the subscription task when the connections are first opened.
    ops_rx: Mutex<Option<mpsc::UnboundedReceiver<Subscription>>>,
    started: OnceLock<Started>,
    connect_timeout: Duration,
    /// The runtime `build()` ran on, where `start` spawns the tasks.
    runtime: Option<tokio::runtime::Handle>,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier")
            .field("nodes", &self.shared.subscribers.len())
            .field("started", &self.started.get().is_some())
            .finish()
    }
}

/// What waiters, the message tasks and the subscription task share.
struct Shared {
    subscribers: Vec<SubscriberClient>,
    /// The quorum size of N nodes: quorum/'s rule, handed in by setup/.
    quorum_of: fn(usize) -> usize,
    lines: Arc<Lines>,
    ops: mpsc::UnboundedSender<Subscription>,
}

/// Subscription changes, applied in the order the lines changed so a late
/// UNSUBSCRIBE can never undo a newer SUBSCRIBE.
enum Subscription {
    Subscribe(Vec<String>, oneshot::Sender<()>),
    Unsubscribe(String),
}

/// Background tasks of started connections; aborted when the `Notifier` goes.
struct Started {
    connections: Vec<ConnectHandle>,
    tasks: Vec<JoinHandle<()>>,
}

impl Notifier {
    /// A notifier over the nodes' subscriber clients (not yet connected).
    pub(crate) fn new(
        subscribers: Vec<SubscriberClient>,
        quorum_of: fn(usize) -> usize,
        connect_timeout: Duration,
    ) -> Self {
        let (ops, ops_rx) = mpsc::unbounded_channel();
        Self {
            first_tries: FirstTries::default(),
            shared: Arc::new(Shared {
                subscribers,
                quorum_of,
                lines: Arc::default(),
                ops,
            }),
            ops_rx: Mutex::new(Some(ops_rx)),
            started: OnceLock::new(),
            connect_timeout,
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// Whether local waiters are lined up on `key` (or the line lingers).
    pub(crate) fn is_waited_on(&self, key: &str) -> bool {
        self.shared.lines.is_waited_on(key)
    }

    /// Waits (until `deadline`) for the turn to send the first attempt of
    /// an exclusive waiter on `key` (wait/first_try.rs).
    pub(crate) async fn first_try(&self, key: &str, deadline: Instant) -> Passed {
        self.first_tries.pass(key, deadline).await
    }

    /// A hold of `key` from this process was released (sent): callers at
    /// its first attempts' gate try instead of waiting for it.
    pub(crate) fn released_here(&self, key: &str) {
        self.first_tries.released(key);
    }

    /// Whether someone waits on `key` now: a release of it opens a hand-off window.
    pub(crate) fn has_waiters(&self, key: &str) -> bool {
        self.shared.lines.has_waiters(key)
    }

    /// A release sent from this process: wakes the local waiters on `key`
    /// at once (the published copies that follow are recognised by token);
    /// when that woke the head of the line, what tells when its attempt is
    /// sent.
    pub(crate) fn released_locally(&self, key: &str, owner: OwnerToken) -> Option<Joining> {
        self.shared
            .lines
            .released_locally(key, owner.to_string().as_bytes())
    }

    /// Joins the lines of `keys` (opening the connections on first use),
    /// subscribed to their channels before it returns (or by `deadline`).
    pub(crate) async fn waiter(&self, keys: &[&str], exclusive: bool, deadline: Instant) -> Waiter {
        self.start();
        let (waiter, opened) = Waiter::join(&self.shared.lines, keys, exclusive);
        if !opened.is_empty() {
            let (done, subscribed) = oneshot::channel();
            let _ = self.shared.ops.send(Subscription::Subscribe(opened, done));
            let _ = tokio::time::timeout_at(deadline.into(), subscribed).await;
        }
        waiter
    }

    /// Connects the subscriber clients and starts the tasks, once.
    fn start(&self) {
        self.started.get_or_init(|| {
            // On the runtime the Redlock was built on (ours and fred's spawns
            // alike), not the first waiter's, which may be short-lived.
            let _runtime = self.runtime.as_ref().map(tokio::runtime::Handle::enter);
            let shared = &self.shared;
            let mut tasks: Vec<JoinHandle<()>> = Vec::new();
            // Receivers first, so the first connection's event is seen too.
            for subscriber in &shared.subscribers {
                tasks.push(tokio::spawn(deliver(
                    Arc::downgrade(shared),
                    subscriber.message_rx(),
                )));
                tasks.push(tokio::spawn(after_reconnect(
                    Arc::downgrade(shared),
                    subscriber.clone(),
                    subscriber.reconnect_rx(),
                )));
            }
            let connections = shared.subscribers.iter().map(|s| s.connect()).collect();
            for subscriber in &shared.subscribers {
                tasks.push(subscriber.manage_subscriptions());
            }
            tasks.push(tokio::spawn(sweep(Arc::downgrade(shared))));
            if let Some(ops) = lock(&self.ops_rx).take() {
                tasks.push(tokio::spawn(apply(
                    Arc::downgrade(shared),
                    ops,
                    self.connect_timeout,
                )));
            }
            Started { connections, tasks }
        });
    }

    /// Closes the subscriber connections and stops the tasks.
    pub(crate) fn stop(&self) {
        if let Some(started) = self.started.get() {
            started.connections.iter().for_each(JoinHandle::abort);
            started.tasks.iter().for_each(JoinHandle::abort);
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Removes the lines that stayed empty for `LINGER`, and unsubscribes them.
async fn sweep(shared: std::sync::Weak<Shared>) {
    let mut tick = tokio::time::interval(LINGER / 4);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        for key in shared.lines.remove_idle(LINGER) {
            let _ = shared.ops.send(Subscription::Unsubscribe(key));
        }
    }
}

/// Applies subscription changes in order, once the connections are up.
async fn apply(
    shared: std::sync::Weak<Shared>,
    mut ops: mpsc::UnboundedReceiver<Subscription>,
    connect_timeout: Duration,
) {
    // Until a quorum is connected (a subscription on a quorum hears every
    // release), or the connect timeout: a node that is down does not hold
    // up the others' subscriptions.
    if let Some(shared) = shared.upgrade() {
        let quorum = (shared.quorum_of)(shared.subscribers.len());
        let mut connected: FuturesUnordered<_> = shared
            .subscribers
            .iter()
            .map(|s| s.wait_for_connect())
            .collect();
        let _ = tokio::time::timeout(connect_timeout, async {
            let mut up = 0;
            while let Some(result) = connected.next().await {
                up += usize::from(result.is_ok());
                if up >= quorum {
                    break;
                }
            }
        })
        .await;
        // Once, aside: each probe has a connection of its own, and a
        // stopped node must not hold up the subscriptions. Its own
        // timeouts end it (`warn_if_refused`).
        let subscribers = shared.subscribers.clone();
        tokio::spawn(async move {
            futures::future::join_all(subscribers.iter().map(channels::warn_if_refused)).await;
        });
    }
    while let Some(op) = ops.recv().await {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        match op {
            Subscription::Subscribe(keys, done) => {
                let channels: Vec<String> = keys.iter().map(|k| keys::channel(k)).collect();
                let mut calls: FuturesUnordered<_> = shared
                    .subscribers
                    .iter()
                    .map(|s| {
                        let (subscriber, channels) = (s.clone(), channels.clone());
                        async move { channels::subscribe(&subscriber, channels).await }
                    })
                    .collect();
                // A release frees the lock on a quorum, so a quorum of
                // subscriptions hears of it: the waiter need not wait for a
                // down or slow node (it is subscribed again on reconnect).
                let quorum = (shared.quorum_of)(shared.subscribers.len());
                let mut subscribed = 0;
                while let Some(result) = calls.next().await {
                    match result {
                        Ok(()) => subscribed += 1,
                        Err(e) => tracing::debug!(error = %e, "subscribe failed"),
                    }
                    if subscribed >= quorum {
                        break;
                    }
                }
                let _ = done.send(());
                // Already on the wire: the rest finish in the background.
                tokio::spawn(async move { while calls.next().await.is_some() {} });
            }
            Subscription::Unsubscribe(key) => {
                // A newer waiter may have re-opened the line meanwhile.
                if shared.lines.is_waited_on(&key) {
                    continue;
                }
                let channel = keys::channel(&key);
                let calls = shared.subscribers.iter().map(|s| {
                    let (subscriber, channel) = (s.clone(), channel.clone());
                    async move { channels::unsubscribe(&subscriber, channel).await }
                });
                // Nobody waits on it: sent now (one poll sends every call,
                // in order after the subscribe on each connection), answered
                // in the background.
                let mut calls = Box::pin(futures::future::join_all(calls));
                if futures::poll!(calls.as_mut()).is_pending() {
                    tokio::spawn(calls);
                }
            }
        }
    }
}

/// Turns one node's messages into wake-ups.
async fn deliver(
    shared: std::sync::Weak<Shared>,
    mut messages: tokio::sync::broadcast::Receiver<fred::types::Message>,
) {
    loop {
        let message = messages.recv().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        match message {
            Ok(message) => {
                if let Some(key) = message.channel.strip_prefix(CHANNEL_PREFIX) {
                    shared
                        .lines
                        .released(key, once_per(key, message.value.as_bytes()));
                }
            }
            // Messages were dropped: any line may have missed its release.
            Err(RecvError::Lagged(_)) => shared.lines.wake_all(),
            Err(RecvError::Closed) => return,
        }
    }
}

/// The tag by which the copies of one announcement (one per node) wake a
/// line once: a release's token. A loss or an ask wakes its line at every
/// node's copy (`None`): a watchdog that extended at the first copy (the
/// other nodes not reached yet, so the extension succeeded) must hear the
/// next ones, which carry the same tag.
fn once_per<'a>(line: &str, tag: Option<&'a [u8]>) -> Option<&'a [u8]> {
    tag.filter(|_| !keys::wakes_at_every_copy(line))
}

/// After a reconnection: wake every line (a release may have been missed
/// while disconnected) and subscribe what fred's own resubscription lacks.
async fn after_reconnect(
    shared: std::sync::Weak<Shared>,
    subscriber: SubscriberClient,
    mut reconnects: tokio::sync::broadcast::Receiver<fred::types::config::Server>,
) {
    let mut first = true;
    loop {
        match reconnects.recv().await {
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => return,
        }
        let Some(shared) = shared.upgrade() else {
            return;
        };
        // Nothing can have been missed before the first connection.
        if !std::mem::take(&mut first) {
            shared.lines.wake_all();
        }
        let missing: Vec<String> = shared
            .lines
            .keys()
            .iter()
            .map(|key| keys::channel(key))
            .filter(|channel| !channels::is_tracked(&subscriber, channel))
            .collect();
        drop(shared);
        if !missing.is_empty() {
            if let Err(e) = channels::subscribe(&subscriber, missing).await {
                tracing::debug!(error = %e, "resubscribe after reconnect failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::once_per;

    #[test]
    fn releases_wake_once_per_token_losses_and_asks_at_every_copy() {
        let tag: &[u8] = b"0123";
        assert_eq!(once_per("lock:{a}", Some(tag)), Some(tag));
        assert_eq!(once_per("lock:{a}:news", Some(tag)), Some(tag));
        assert_eq!(once_per("lock:{a}:lost", Some(tag)), None);
        assert_eq!(once_per("lock:{a}:ask", Some(tag)), None);
    }
}
