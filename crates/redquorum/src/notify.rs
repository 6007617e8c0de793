//! Release notifications: wake `lock()` waiters when a holder releases.
//!
//! The release script publishes the owner token on `redquorum:released:<key>`
//! on every node where it deleted the key (see `scripts/lock_ops.lua`). One
//! subscriber connection per node, shared by all waiters of a `Redlock` and its
//! clones, listens on the channels of the resources someone here waits for: a
//! channel is subscribed when the first local waiter on its resource arrives
//! and unsubscribed when the last one has left (after a short linger, so a
//! waiter that comes straight back does not pay SUBSCRIBE + UNSUBSCRIBE).
//!
//! Local waiters on one resource form a FIFO line and only the head contends,
//! so a release costs one acquire attempt from this process, not one per
//! waiter (a thundering herd would multiply the requests per hand-off).
//!
//! Notifications are hints, never the only way forward: a message is lost when
//! the subscriber is reconnecting, when the broadcast buffer overflows, or when
//! the key expired instead of being released. The head therefore waits for a
//! notification *or* its jittered backoff, whichever comes first.

use crate::sync::lock;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use fred::clients::SubscriberClient;
use fred::interfaces::{ClientLike, EventInterface, PubsubInterface};
use fred::types::ConnectHandle;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::token::OwnerToken;

/// Prefix of the per-resource release channel; `scripts/lock_ops.lua` uses the same.
pub(crate) const CHANNEL_PREFIX: &str = "redquorum:released:";

/// How long an empty line (and its channel subscription) is kept. A waiter
/// that comes back within it (two workers taking turns, say) neither pays
/// SUBSCRIBE + UNSUBSCRIBE nor a blind attempt against the lock its
/// predecessor just won: it waits for that holder's release.
const LINGER: Duration = Duration::from_secs(1);

/// How many recent release tokens a line remembers, to count each release once
/// although every node sends its own copy.
const RECENT: usize = 4;

/// The release channel of a lock key.
fn channel(key: &str) -> String {
    format!("{CHANNEL_PREFIX}{key}")
}

/// Every node's subscriber connection and the lines of local waiters.
///
/// The connections are opened on first contention only: a `Redlock` that
/// never waits never opens them.
pub(crate) struct Notifier {
    shared: Arc<Shared>,
    /// Taken by the subscription task when the connections are first opened.
    ops_rx: Mutex<Option<mpsc::UnboundedReceiver<Op>>>,
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
    /// Lines by lock key; a line exists while at least one waiter is in it.
    lines: Mutex<HashMap<String, Arc<Line>>>,
    /// `lines.len()`, readable without the mutex.
    lines_len: AtomicUsize,
    ops: mpsc::UnboundedSender<Op>,
}

/// Subscription changes, applied in the order the waiter counts changed so a
/// late UNSUBSCRIBE can never undo a newer SUBSCRIBE.
enum Op {
    Subscribe(String, oneshot::Sender<()>),
    Unsubscribe(String),
}

/// Background tasks of started connections; aborted when the `Notifier` goes.
struct Started {
    connections: Vec<ConnectHandle>,
    tasks: Vec<JoinHandle<()>>,
}

/// The local waiters on one resource.
struct Line {
    /// Counted under `Shared::lines`' mutex: the line leaves the map at zero.
    waiters: AtomicUsize,
    /// One permit: the right to contend. FIFO, so waiters take turns in order.
    turn: Arc<Semaphore>,
    /// Woken (one head at a time) by a release notification.
    wake: Notify,
    /// Set when the head won the lock: the next head then waits for that
    /// holder's release instead of trying at once against a held key.
    handed_over: AtomicBool,
    recent: Mutex<Recent>,
    /// When the last waiter left (the line then lingers for `LINGER`).
    idle_since: Mutex<Option<Instant>>,
}

#[derive(Default)]
struct Recent {
    tokens: [Option<Box<[u8]>>; RECENT],
    next: usize,
}

impl Recent {
    /// Records `token`; false when it was seen recently (another node's copy).
    fn is_new(&mut self, token: &[u8]) -> bool {
        if self.tokens.iter().flatten().any(|t| &t[..] == token) {
            return false;
        }
        self.tokens[self.next] = Some(token.into());
        self.next = (self.next + 1) % RECENT;
        true
    }
}

impl Line {
    fn new() -> Self {
        Self {
            waiters: 0.into(),
            turn: Arc::new(Semaphore::new(1)),
            wake: Notify::new(),
            handed_over: AtomicBool::new(false),
            recent: Mutex::new(Recent::default()),
            idle_since: Mutex::new(None),
        }
    }
}

impl Notifier {
    /// Takes the (not yet connected) subscriber client of every node.
    pub(crate) fn new(subscribers: Vec<SubscriberClient>, connect_timeout: Duration) -> Self {
        let (ops, ops_rx) = mpsc::unbounded_channel();
        Self {
            shared: Arc::new(Shared {
                subscribers,
                lines: Mutex::new(HashMap::new()),
                lines_len: AtomicUsize::new(0),
                ops,
            }),
            ops_rx: Mutex::new(Some(ops_rx)),
            started: OnceLock::new(),
            connect_timeout,
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// Whether `key` has a line: someone waits on it, or did within `LINGER`
    /// (a newcomer then lines up behind them instead of racing them).
    pub(crate) fn is_waited_on(&self, key: &str) -> bool {
        lock(&self.shared.lines).contains_key(key)
    }

    /// Whether someone in this process waits on `key` right now (a line
    /// that only lingers after its last waiter does not count).
    pub(crate) fn has_waiters(&self, key: &str) -> bool {
        !self.is_idle()
            && lock(&self.shared.lines)
                .get(key)
                .is_some_and(|line| line.waiters.load(Ordering::Relaxed) > 0)
    }

    /// Our own release of `key` has been queued on every node's connection:
    /// wake the head of its line at once. Its attempt is sent behind the
    /// release on the same connections, so it lands after it. The nodes'
    /// messages for this release then count as copies already seen.
    pub(crate) fn released_locally(&self, key: &str, owner: OwnerToken) {
        if self.is_idle() {
            return;
        }
        let Some(line) = lock(&self.shared.lines).get(key).cloned() else {
            return;
        };
        if lock(&line.recent).is_new(owner.as_value().as_bytes()) {
            line.wake.notify_one();
        }
    }

    /// Whether no one waits on any resource: lets the uncontended `lock()`
    /// skip the key lookup (no lock, no allocation).
    pub(crate) fn is_idle(&self) -> bool {
        self.shared.lines_len.load(Ordering::Relaxed) == 0
    }

    /// Joins the line of `key`, subscribing its channel if this is the first
    /// waiter (waiting at most until `deadline` for the subscription).
    ///
    /// Cancel safe: dropping the future or the `Waiter` leaves the line.
    pub(crate) async fn waiter(&self, key: &str, deadline: Instant) -> Waiter {
        self.start();
        let (line, subscribed) = {
            let mut lines = lock(&self.shared.lines);
            let mut subscribed = None;
            let line = lines.entry(key.to_owned()).or_insert_with(|| {
                let (done, rx) = oneshot::channel();
                let _ = self.shared.ops.send(Op::Subscribe(key.to_owned(), done));
                subscribed = Some(rx);
                Arc::new(Line::new())
            });
            line.waiters.fetch_add(1, Ordering::Relaxed);
            *lock(&line.idle_since) = None;
            let line = Arc::clone(line);
            self.shared.lines_len.store(lines.len(), Ordering::Relaxed);
            (line, subscribed)
        };
        let waiter = Waiter {
            shared: Arc::clone(&self.shared),
            key: key.to_owned(),
            line,
            turn: None,
        };
        if let Some(subscribed) = subscribed {
            let _ = tokio::time::timeout_at(deadline.into(), subscribed).await;
        }
        waiter
    }

    /// Connects every subscriber and spawns the tasks, once.
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
                tasks.push(tokio::spawn(apply_ops(
                    Arc::downgrade(shared),
                    ops,
                    self.connect_timeout,
                )));
            }
            Started { connections, tasks }
        });
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        if let Some(started) = self.started.get() {
            started.connections.iter().for_each(|task| task.abort());
            started.tasks.iter().for_each(|task| task.abort());
        }
    }
}

impl Shared {
    /// A release message: wake the head of that resource's line, once per release.
    fn released(&self, channel: &str, token: Option<&[u8]>) {
        let Some(key) = channel.strip_prefix(CHANNEL_PREFIX) else {
            return;
        };
        let Some(line) = lock(&self.lines).get(key).cloned() else {
            return;
        };
        let is_new = token.is_none_or(|token| lock(&line.recent).is_new(token));
        if is_new {
            line.wake.notify_one();
        }
    }

    /// Messages may have been lost: let every head retry now.
    fn wake_all(&self) {
        for line in lock(&self.lines).values() {
            line.wake.notify_one();
        }
    }

    fn desired_channels(&self) -> Vec<String> {
        lock(&self.lines).keys().map(|key| channel(key)).collect()
    }
}

/// A waiter's place in its resource's line; leaving it (drop) unsubscribes
/// the channel when it was the last one.
pub(crate) struct Waiter {
    shared: Arc<Shared>,
    key: String,
    line: Arc<Line>,
    turn: Option<OwnedSemaphorePermit>,
}

impl fmt::Debug for Waiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Waiter")
            .field("key", &self.key)
            .field("is_head", &self.turn.is_some())
            .finish()
    }
}

impl Waiter {
    /// Waits until it is worth trying again: for the head, a release
    /// notification or `pause`, whichever comes first; for the others, their
    /// turn (or `deadline`, so a waiter always makes its final attempt).
    ///
    /// Cancel safe: nothing is lost if dropped.
    pub(crate) async fn wait(&mut self, pause: Duration, deadline: Instant) {
        if self.turn.is_none() {
            let turn = Arc::clone(&self.line.turn).acquire_owned();
            match tokio::time::timeout_at(deadline.into(), turn).await {
                Ok(Ok(permit)) => self.turn = Some(permit),
                // Deadline: let the caller make its last attempt.
                Ok(Err(_)) | Err(_) => return,
            }
            if !self.line.handed_over.swap(false, Ordering::AcqRel) {
                // The previous head left without the lock (or there was none):
                // the resource may be free now.
                return;
            }
        }
        tokio::select! {
            () = self.line.wake.notified() => {}
            () = tokio::time::sleep(pause) => {}
        }
    }

    /// The lock was won: the next head waits for our release, not for a try.
    pub(crate) fn won(self) {
        if self.turn.is_some() {
            self.line.handed_over.store(true, Ordering::Release);
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let _lines = lock(&self.shared.lines);
        if self.line.waiters.fetch_sub(1, Ordering::Relaxed) == 1 {
            // Swept (and unsubscribed) by `sweep` if nobody comes back.
            *lock(&self.line.idle_since) = Some(Instant::now());
        }
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
        shared.remove_idle(LINGER);
    }
}

impl Shared {
    /// Removes lines empty for at least `linger`; their channels are unsubscribed in order.
    fn remove_idle(&self, linger: Duration) {
        let mut lines = lock(&self.lines);
        let idle: Vec<String> = lines
            .iter()
            .filter(|(_, line)| {
                line.waiters.load(Ordering::Relaxed) == 0
                    && lock(&line.idle_since).is_some_and(|since| since.elapsed() >= linger)
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in idle {
            lines.remove(&key);
            let _ = self.ops.send(Op::Unsubscribe(key));
        }
        self.lines_len.store(lines.len(), Ordering::Relaxed);
    }
}

/// Applies subscription changes one at a time, in order.
async fn apply_ops(
    shared: std::sync::Weak<Shared>,
    mut ops: mpsc::UnboundedReceiver<Op>,
    connect_timeout: Duration,
) {
    if let Some(shared) = shared.upgrade() {
        let connected = shared
            .subscribers
            .iter()
            .map(|s| tokio::time::timeout(connect_timeout, s.wait_for_connect()));
        futures::future::join_all(connected).await;
    }
    while let Some(op) = ops.recv().await {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        match op {
            Op::Subscribe(key, done) => {
                let channel = channel(&key);
                let calls = shared.subscribers.iter().map(|s| s.subscribe(&channel));
                for result in futures::future::join_all(calls).await {
                    if let Err(e) = result {
                        // That node's channel is subscribed again when it reconnects.
                        tracing::debug!(error = %e, %channel, "subscribe failed");
                    }
                }
                let _ = done.send(());
            }
            Op::Unsubscribe(key) => {
                // A newer waiter may have re-created the line meanwhile.
                if lock(&shared.lines).contains_key(&key) {
                    continue;
                }
                let channel = channel(&key);
                let calls = shared.subscribers.iter().map(|s| s.unsubscribe(&channel));
                futures::future::join_all(calls).await;
            }
        }
    }
}

/// Forwards one node's release messages to the lines.
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
            Ok(message) => shared.released(&message.channel, message.value.as_bytes()),
            Err(RecvError::Lagged(_)) => shared.wake_all(),
            Err(RecvError::Closed) => return,
        }
    }
}

/// After a reconnect: wake every head (releases may have been missed while
/// down) and subscribe the channels fred does not track on this node
/// (`manage_subscriptions` resubscribes only those that once succeeded).
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
            shared.wake_all();
        }
        let tracked = subscriber.tracked_channels();
        let missing: Vec<String> = shared
            .desired_channels()
            .into_iter()
            .filter(|c| !tracked.iter().any(|t| &t[..] == c.as_str()))
            .collect();
        drop(shared);
        if !missing.is_empty() {
            if let Err(e) = subscriber.subscribe(missing).await {
                tracing::debug!(error = %e, "resubscribe after reconnect failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_empty_line_lingers_then_is_swept() {
        let notifier = Notifier::new(Vec::new(), Duration::from_millis(10));
        assert!(notifier.is_idle());
        let deadline = Instant::now() + Duration::from_secs(5);
        let waiter = notifier.waiter("lock:a", deadline).await;
        assert!(notifier.is_waited_on("lock:a") && !notifier.is_idle());
        drop(waiter);
        // Still there for a returning waiter...
        notifier.shared.remove_idle(Duration::from_secs(3600));
        assert!(notifier.is_waited_on("lock:a"));
        // ...but not once it has been empty for the linger time.
        notifier.shared.remove_idle(Duration::ZERO);
        assert!(!notifier.is_waited_on("lock:a") && notifier.is_idle());
    }

    #[tokio::test]
    async fn a_line_in_use_is_never_swept() {
        let notifier = Notifier::new(Vec::new(), Duration::from_millis(10));
        let deadline = Instant::now() + Duration::from_secs(5);
        let first = notifier.waiter("lock:b", deadline).await;
        let second = notifier.waiter("lock:b", deadline).await;
        drop(first);
        notifier.shared.remove_idle(Duration::ZERO);
        assert!(notifier.is_waited_on("lock:b"));
        drop(second);
        notifier.shared.remove_idle(Duration::ZERO);
        assert!(!notifier.is_waited_on("lock:b"));
    }

    #[test]
    fn each_release_is_counted_once_across_node_copies() {
        let mut recent = Recent::default();
        assert!(recent.is_new(b"a"));
        assert!(!recent.is_new(b"a"));
        assert!(recent.is_new(b"b"));
        assert!(!recent.is_new(b"a"));
        for t in [b"c", b"d", b"e"] {
            assert!(recent.is_new(t));
        }
        // "a" has left the window of RECENT tokens: a new release with the same
        // token is impossible (tokens are random), but it must not be refused forever.
        assert!(recent.is_new(b"a"));
    }

    #[test]
    fn channel_names_carry_the_key() {
        assert_eq!(channel("lock:a"), "redquorum:released:lock:a");
    }
}
