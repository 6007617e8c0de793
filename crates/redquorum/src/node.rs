//! One Redis master: its fred client, timeouts, and the three script calls.

use std::fmt;
use std::time::Duration;

use fred::clients::{Client, SubscriberClient};
use fred::interfaces::{ClientLike, EventInterface};
use fred::prelude::{Config, ConnectionConfig, PerformanceConfig, ReconnectPolicy, ServerConfig};
use fred::types::scripts::Script;
use fred::types::{ConnectHandle, Value};
use std::sync::Arc;
use tokio::runtime::Handle;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use crate::batch::{self, Batcher, LockOp, Queued, Turn};
use crate::error::{BuildError, NodeError};
use crate::health::{Health, NodeHealth, Probe};
use crate::outcome::NodeOutcome;
use crate::scripts;
use crate::token::OwnerToken;

/// A node's identity: `host:port`. Never carries credentials, so it is safe to log.
///
/// # Examples
///
/// ```no_run
/// # fn demo(err: &redquorum::NodeError) {
/// let node: &redquorum::NodeId = err.node();
/// println!("{node}"); // e.g. 127.0.0.1:7001
/// # }
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    host: String,
    port: u16,
}

impl NodeId {
    /// The host name or address.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(node: &redquorum::NodeId) {
    /// println!("{}", node.host());
    /// # }
    /// ```
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The TCP port.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(node: &redquorum::NodeId) {
    /// println!("{}", node.port());
    /// # }
    /// ```
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({self})")
    }
}

/// Replaces the password in a URL with `***`, for error messages.
pub(crate) fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return if url.contains('@') {
            "***".into()
        } else {
            url.into()
        };
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
            // `redis://password@host` puts a bare password in the user position
            None => format!("{scheme}://***@{host}"),
        },
        None => url.into(),
    }
}

/// Parses a node URL into fred's config and the node's identity.
pub(crate) fn parse_url(url: &str) -> Result<(Config, NodeId), BuildError> {
    let invalid = |source| BuildError::InvalidUrl {
        url: redact_url(url),
        source,
    };
    // fred would take any scheme (http://...) as a plain connection.
    let scheme = url.split_once("://").map(|(scheme, _)| scheme);
    if !matches!(scheme, Some("redis" | "rediss")) {
        return Err(invalid(fred::error::Error::new(
            fred::error::ErrorKind::Config,
            "a node URL must start with redis:// or rediss://",
        )));
    }
    let config = Config::from_url(url).map_err(invalid)?;
    let id = match &config.server {
        ServerConfig::Centralized { server } => NodeId {
            host: server.host.to_string(),
            port: server.port,
        },
        _ => {
            return Err(invalid(fred::error::Error::new(
                fred::error::ErrorKind::Config,
                "a node must be a single master (redis:// or rediss://), not a cluster or sentinel URL",
            )));
        }
    };
    // Without a TLS feature fred would connect a rediss:// URL in plain text.
    if url.starts_with("rediss") && !cfg!(feature = "tls") {
        return Err(BuildError::TlsNotEnabled(id));
    }
    Ok((config, id))
}

/// One independent Redis master.
pub(crate) struct Node {
    id: NodeId,
    client: Client,
    /// Cached probe results and the delayed-restart rule (see health.rs).
    health: Health,
    /// The plain lock's operations waiting for a call (group commit).
    batcher: Batcher,
    /// How long one operation may take, queueing included.
    timeout: Duration,
    /// Where batches are sent from: the runtime `build()` ran on.
    runtime: Handle,
}

impl fmt::Debug for Node {
    // fred's Client Debug is not used: only the id, which never has a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node").field("id", &self.id).finish()
    }
}

impl Node {
    /// Creates the client. Lock-safe settings, each chosen because fred's
    /// default is risky for locks (see docs/operations.md):
    /// - every command times out after `node_timeout` (fred's default: never);
    /// - a command is sent at most once, never re-sent after a reconnect, so a
    ///   stale acquire cannot land after we gave up on it;
    /// - reconnect forever with backoff, so a node that was down at start-up
    ///   or restarted rejoins (`fail_fast` would end the client for good if the
    ///   first connect failed).
    pub(crate) fn new(config: Config, id: NodeId, node_timeout: Duration) -> Self {
        let (config, performance, connection, reconnect) = Self::settings(config, node_timeout);
        let client = Client::new(config, Some(performance), Some(connection), Some(reconnect));
        // Subscribed before connect(), so the first connection counts as one.
        let health = Health::new(client.reconnect_rx());
        Self {
            id,
            client,
            health,
            batcher: Batcher::default(),
            timeout: node_timeout,
            runtime: Handle::current(),
        }
    }

    /// Enables the delayed-restart rule for leases up to `max_ttl` (`None`: off)
    /// and sets the time between health probes.
    pub(crate) fn with_health(mut self, max_ttl: Option<Duration>, interval: Duration) -> Self {
        self.health.configure(max_ttl, interval);
        self
    }

    /// Creates the node's subscriber client for release notifications
    /// (`notify.rs`), not yet connected. It keeps the lock-safe settings of
    /// [`Node::new`]: timeouts of `node_timeout`, one attempt per command,
    /// reconnect forever. Its message buffer is larger than fred's 32 so a
    /// burst of releases is not dropped as `Lagged` (which only costs a
    /// spurious retry, but still costs).
    pub(crate) fn subscriber(config: Config, node_timeout: Duration) -> SubscriberClient {
        let (config, performance, connection, reconnect) = Self::settings(config, node_timeout);
        let performance = PerformanceConfig {
            broadcast_channel_capacity: 1024,
            ..performance
        };
        SubscriberClient::new(config, Some(performance), Some(connection), Some(reconnect))
    }

    /// The lock-safe fred settings shared by both clients of a node (see [`Node::new`]).
    fn settings(
        mut config: Config,
        node_timeout: Duration,
    ) -> (Config, PerformanceConfig, ConnectionConfig, ReconnectPolicy) {
        config.fail_fast = false;
        let connect_timeout = Self::connect_timeout(node_timeout);
        let performance = PerformanceConfig {
            default_command_timeout: node_timeout,
            ..Default::default()
        };
        let connection = ConnectionConfig {
            connection_timeout: connect_timeout,
            internal_command_timeout: connect_timeout,
            max_command_attempts: 1,
            max_redirections: 0,
            auto_client_setname: false,
            ..Default::default()
        };
        let reconnect = ReconnectPolicy::new_exponential(0, 20, 1_000, 2);
        (config, performance, connection, reconnect)
    }

    /// Starts the connection task; commands queue until it is up.
    pub(crate) fn connect(&self) -> ConnectHandle {
        self.client.connect()
    }

    /// Resolves when the current connection attempt succeeds or fails.
    /// Returns whether it succeeded. A refused connection is reported on the
    /// error channel, not to `wait_for_connect` (fred keeps retrying), so both
    /// are watched: a node that is down answers "no" at once instead of
    /// holding the first call for the whole connect timeout.
    pub(crate) async fn wait_connected(&self) -> bool {
        let mut errors = self.client.error_rx();
        tokio::select! {
            connected = self.client.wait_for_connect() => connected.is_ok(),
            _ = errors.recv() => self.client.is_connected(),
        }
    }

    /// How long connecting (and the handshake) may take.
    pub(crate) fn connect_timeout(node_timeout: Duration) -> Duration {
        (node_timeout * 10).clamp(Duration::from_millis(500), Duration::from_secs(5))
    }

    pub(crate) fn id(&self) -> &NodeId {
        &self.id
    }

    /// Takes the key for `ttl`, or reports it taken.
    pub(crate) async fn acquire(
        self: &Arc<Self>,
        key: &str,
        owner: OwnerToken,
        ttl: Duration,
    ) -> NodeOutcome {
        let reply = self
            .lock_op(LockOp::Acquire, key, None, owner, millis(ttl))
            .await;
        self.admit(self.outcome(reply))
    }

    /// Takes the key for `ttl` and, where it did, proposes the next fencing
    /// token on `fence_key` in the same call (fence.rs): the proposal comes
    /// with an `Acquired` vote.
    pub(crate) async fn acquire_fenced(
        self: &Arc<Self>,
        key: &str,
        fence_key: &str,
        owner: OwnerToken,
        ttl: Duration,
    ) -> (NodeOutcome, Option<i64>) {
        let reply = self
            .lock_op(
                LockOp::AcquireFenced,
                key,
                Some(fence_key),
                owner,
                millis(ttl),
            )
            .await;
        // > 0: acquired, with the proposal; -2: acquired, no proposal (the
        // fence key is not a number); 0: taken.
        let proposal = reply.as_ref().ok().copied().filter(|&p| p > 0);
        let outcome = self.admit(self.outcome(reply.map(|p| i64::from(p > 0 || p == -2))));
        let proposal = proposal.filter(|_| outcome.is_acquired());
        (outcome, proposal)
    }

    /// Resets our key's expiry to `ttl` (owner-checked).
    pub(crate) async fn extend(
        self: &Arc<Self>,
        key: &str,
        owner: OwnerToken,
        ttl: Duration,
    ) -> NodeOutcome {
        let reply = self
            .lock_op(LockOp::Extend, key, None, owner, millis(ttl))
            .await;
        self.admit(self.outcome(reply))
    }

    /// Deletes our key (owner-checked) and publishes the release.
    pub(crate) async fn release(self: &Arc<Self>, key: &str, owner: OwnerToken) -> NodeOutcome {
        let reply = self.lock_op(LockOp::Release, key, None, owner, 0).await;
        self.outcome(reply)
    }

    /// Runs one plain-lock operation: at once when the node has a free
    /// in-flight slot, else in the next batch (see batch.rs).
    async fn lock_op(
        self: &Arc<Self>,
        op: LockOp,
        key: &str,
        fence_key: Option<&str>,
        owner: OwnerToken,
        ttl_ms: i64,
    ) -> Result<i64, fred::error::Error> {
        let turn = self.batcher.enter(|reply| Queued {
            op,
            key: key.to_owned(),
            fence_key: fence_key.map(str::to_owned),
            owner,
            ttl_ms,
            reply,
        });
        match turn {
            Turn::Send => {
                let args = op.args(owner, ttl_ms).to_vec();
                let client = self.client.clone();
                let key: Vec<String> = std::iter::once(key)
                    .chain(fence_key)
                    .map(str::to_owned)
                    .collect();
                let call = async move {
                    scripts::eval_cached(&scripts::LOCK_OPS, &client, key, args).await
                };
                let mut in_flight = InFlight {
                    node: Arc::clone(self),
                    call: Some(Box::pin(call)),
                };
                let replies = in_flight.call.as_mut().expect("set above").await;
                in_flight.call = None;
                drop(in_flight);
                let mut replies = replies?.into_iter();
                match (replies.next(), replies.next()) {
                    (Some(reply), None) => failed_alone(reply),
                    _ => Err(fred::error::Error::new(
                        fred::error::ErrorKind::Protocol,
                        "lock_ops answered other than one result for one operation",
                    )),
                }
            }
            Turn::Wait(reply) => match tokio::time::timeout(self.timeout, reply).await {
                Ok(Ok(reply)) => reply.and_then(failed_alone),
                Ok(Err(_dropped)) => Err(fred::error::Error::new(
                    fred::error::ErrorKind::Canceled,
                    "the batch was dropped (runtime shut down)",
                )),
                Err(_elapsed) => Err(fred::error::Error::new(
                    fred::error::ErrorKind::Timeout,
                    "no reply within the node timeout (queued behind calls in flight)",
                )),
            },
        }
    }

    /// Opens a hand-off window (see [`Batcher::hold`]).
    pub(crate) fn hold_batches(&self) {
        self.batcher.hold();
    }

    /// Closes a hand-off window and sends what queued during it.
    pub(crate) fn unhold_batches(self: &Arc<Self>) {
        if let Some(sent) = self.batcher.unhold(|batch| self.send_batch(batch)) {
            self.finish_batch(sent);
        }
    }

    /// A call on one of our slots has ended: send the next batch on it.
    fn call_ended(self: &Arc<Self>) {
        if let Some(sent) = self.batcher.next_batch(|batch| self.send_batch(batch)) {
            self.finish_batch(sent);
        }
    }

    /// Puts `batch` on the connection as one call: the call is polled once
    /// here, so its command is sent before this returns (the batcher calls
    /// it under its lock: nothing that enters later can overtake it). It
    /// must not deliver or touch the batcher: [`Node::finish_batch`] does,
    /// once the lock is released.
    fn send_batch(&self, batch: Vec<Queued>) -> SentBatch {
        let mut keys = Vec::with_capacity(batch.len());
        let mut args = Vec::with_capacity(batch.len() * 3);
        let mut replies = Vec::with_capacity(batch.len());
        for queued in batch {
            args.extend(queued.op.args(queued.owner, queued.ttl_ms));
            keys.push(queued.key);
            keys.extend(queued.fence_key);
            replies.push(queued.reply);
        }
        let client = self.client.clone();
        let mut call: BatchCall =
            Box::pin(
                async move { scripts::eval_cached(&scripts::LOCK_OPS, &client, keys, args).await },
            );
        let mut first_poll = std::task::Context::from_waker(std::task::Waker::noop());
        let first = call.as_mut().poll(&mut first_poll);
        SentBatch {
            call,
            first,
            replies,
        }
    }

    /// Hands a sent batch's results over when it completes (in the
    /// background), then lets the slot carry the next batch.
    fn finish_batch(self: &Arc<Self>, sent: SentBatch) {
        let SentBatch {
            call,
            first,
            replies,
        } = sent;
        match first {
            // Failed at once (say, the connection task is gone): deliver here.
            std::task::Poll::Ready(result) => {
                batch::deliver(replies, result);
                self.call_ended();
            }
            std::task::Poll::Pending => {
                let node = Arc::clone(self);
                self.runtime.spawn(async move {
                    batch::deliver(replies, call.await);
                    node.call_ended();
                });
            }
        }
    }

    /// Runs any 1/0 script on this node with several keys: 1 is `Acquired`
    /// (acted on our entry), anything else `Taken`. Used by the other lock kinds.
    pub(crate) async fn call(
        &self,
        script: &Script,
        keys: Vec<String>,
        args: Vec<Value>,
    ) -> NodeOutcome {
        self.outcome(scripts::eval_cached(script, &self.client, keys, args).await)
    }

    /// EVALSHA, or EVAL when the node does not have the script cached.
    pub(crate) async fn run(
        &self,
        script: &Script,
        key: &str,
        args: Vec<Value>,
    ) -> Result<i64, fred::error::Error> {
        scripts::eval_cached(script, &self.client, key, args).await
    }

    /// Loads every script into the node's cache; errors are left to the calls' EVAL fallback.
    pub(crate) async fn load_scripts(&self) {
        // Concurrently: pipelined on the one connection, one round trip in all.
        let loads = scripts::ALL.iter().map(|script| script.load(&self.client));
        for result in futures::future::join_all(loads).await {
            if let Err(e) = result {
                tracing::debug!(node = %self.id, error = %e, "script load failed");
            }
        }
    }

    /// Reloads the scripts after every (re)connection, for as long as the client lives.
    pub(crate) fn spawn_script_loader(self: &Arc<Self>) -> JoinHandle<()> {
        // Subscribed before connect() so the first connection's event is seen too.
        let mut reconnects = self.client.reconnect_rx();
        let node = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                match reconnects.recv().await {
                    Ok(_) | Err(RecvError::Lagged(_)) => match node.upgrade() {
                        Some(node) => node.load_scripts().await,
                        None => return,
                    },
                    Err(RecvError::Closed) => return,
                }
            }
        })
    }

    /// Maps a script reply (1 = acted on our key, 0 = not ours) or an error.
    fn outcome(&self, reply: Result<i64, fred::error::Error>) -> NodeOutcome {
        match reply {
            Ok(1) => NodeOutcome::Acquired,
            Ok(_) => NodeOutcome::Taken,
            Err(e) if *e.kind() == fred::error::ErrorKind::Timeout => NodeOutcome::TimedOut,
            Err(e) => NodeOutcome::Failed(NodeError::new(self.id.clone(), e)),
        }
    }
}

impl Node {
    /// Turns a vote into `Refused` when the node may not count toward a
    /// quorum now. Checked after the reply, so a reconnection (a possible
    /// restart) that carried this very reply is seen.
    pub(crate) fn admit(&self, outcome: NodeOutcome) -> NodeOutcome {
        if !outcome.is_acquired() {
            return outcome;
        }
        match self.health.refusal() {
            Some(reason) => {
                crate::observe::vote_refused(&self.id, &reason);
                NodeOutcome::Refused(reason)
            }
            None => outcome,
        }
    }

    /// The node's health as of its last probe.
    pub(crate) fn health(&self) -> NodeHealth {
        self.health.snapshot()
    }

    /// Asks the node what it is (`INFO`, `CONFIG GET appendfsync`) and caches
    /// the answer. A user denied these commands gets "unknown" fields; a
    /// timeout or a connection error keeps the previous result (and an
    /// unverified node stays unverified).
    pub(crate) async fn probe_health(&self) {
        let epoch = self.health.probe_epoch();
        let started = std::time::Instant::now();
        let info = match self.command("INFO", vec![]).await {
            Ok(Value::String(text)) => Some(text.to_string()),
            Ok(other) => other.as_string(),
            Err(e) if is_transport(&e) => return,
            Err(e) => {
                tracing::debug!(node = %self.id, error = %e, "INFO denied; health unknown");
                None
            }
        };
        let appendfsync = match self
            .command("CONFIG", vec!["GET".into(), "appendfsync".into()])
            .await
        {
            Ok(Value::Array(values)) => values.get(1).and_then(Value::as_string),
            Ok(_) => None,
            Err(e) if is_transport(&e) => return,
            Err(e) => {
                tracing::debug!(node = %self.id, error = %e, "CONFIG GET denied; durability unknown");
                None
            }
        };
        let probe = Probe::parse(info.as_deref(), appendfsync.as_deref());
        let previous = self.health.record(probe.clone(), epoch, started);
        if previous != probe {
            self.log_health(&probe);
        }
        crate::observe::node_eligible(&self.id, self.health.refusal().is_none());
    }

    /// Logs what changed at warn level only when something is wrong; a
    /// healthy node logs at debug, so steady probes never spam.
    fn log_health(&self, probe: &Probe) {
        let node = &self.id;
        if probe.role == crate::health::Role::Replica {
            tracing::warn!(%node, "node is a replica: its votes are refused; configure masters only");
        }
        if let Some(policy) = probe
            .eviction_policy
            .as_deref()
            .filter(|p| *p != "noeviction")
        {
            tracing::warn!(%node, policy, "maxmemory-policy may evict lock keys; use noeviction");
        }
        tracing::debug!(%node, role = %probe.role, durability = %probe.durability, "node probed");
    }

    /// Probes after every (re)connection and every health interval, for as
    /// long as the node lives.
    pub(crate) fn spawn_health_checker(self: &Arc<Self>) -> JoinHandle<()> {
        let mut reconnects = self.client.reconnect_rx();
        let interval = self.health.interval();
        let node = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                let reconnections = tokio::select! {
                    event = reconnects.recv() => match event {
                        Ok(_) => 1,
                        Err(RecvError::Lagged(missed)) => missed,
                        Err(RecvError::Closed) => return,
                    },
                    // the periodic probe
                    () = tokio::time::sleep(interval) => 0,
                };
                let Some(node) = node.upgrade() else { return };
                node.health.checker_saw_reconnect(reconnections);
                node.probe_health().await;
            }
        })
    }

    async fn command(
        &self,
        name: &'static str,
        args: Vec<Value>,
    ) -> Result<Value, fred::error::Error> {
        let command =
            fred::types::CustomCommand::new_static(name, fred::types::ClusterHash::Random, false);
        self.client.custom(command, args).await
    }
}

/// One call of `lock_ops.lua`, owning its arguments.
type BatchCall = futures::future::BoxFuture<'static, Result<Vec<i64>, fred::error::Error>>;

/// A batch whose call has been polled once (its command is on the connection).
struct SentBatch {
    call: BatchCall,
    first: std::task::Poll<Result<Vec<i64>, fred::error::Error>>,
    replies: Vec<tokio::sync::oneshot::Sender<batch::Reply>>,
}

/// A direct call holding one of its node's in-flight slots. The slot is
/// held until the node answers, even when the caller stops waiting first
/// (the command is on the wire by then): the rest of the call then runs in
/// the background. Then the slot carries the next batch, or is freed.
struct InFlight {
    node: Arc<Node>,
    /// `None` once the call has completed.
    call: Option<BatchCall>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        match self.call.take() {
            Some(call) => {
                let node = Arc::clone(&self.node);
                self.node.runtime.spawn(async move {
                    let _ = call.await;
                    node.call_ended();
                });
            }
            None => self.node.call_ended(),
        }
    }
}

/// The script's -1 for an operation that failed alone: its lock key holds
/// another type of value.
fn failed_alone(reply: i64) -> Result<i64, fred::error::Error> {
    if reply == -1 {
        Err(fred::error::Error::new(
            fred::error::ErrorKind::InvalidArgument,
            "WRONGTYPE the lock key holds a value of another type",
        ))
    } else {
        Ok(reply)
    }
}

/// Errors that say nothing about the node's answer: it was not reached.
fn is_transport(error: &fred::error::Error) -> bool {
    use fred::error::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::Timeout | ErrorKind::IO | ErrorKind::Canceled
    )
}

/// Milliseconds for PX/PEXPIRE, at least 1 (a zero TTL is refused at build time).
fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_url_hides_passwords() {
        assert_eq!(redact_url("redis://u:secret@h:1"), "redis://u:***@h:1");
        assert_eq!(redact_url("redis://secret@h:1"), "redis://***@h:1");
        assert_eq!(redact_url("redis://:secret@h:1/0"), "redis://:***@h:1/0");
        assert_eq!(redact_url("redis://h:1"), "redis://h:1");
        assert_eq!(redact_url("garbage@x"), "***");
    }

    #[test]
    fn parse_url_names_the_node_by_host_and_port() {
        let (_, id) = parse_url("redis://user:pw@127.0.0.1:7001").unwrap();
        assert_eq!(id.to_string(), "127.0.0.1:7001");
        assert_eq!(format!("{id:?}"), "NodeId(127.0.0.1:7001)");
    }

    #[test]
    fn parse_url_refuses_cluster_urls_and_garbage() {
        assert!(matches!(
            parse_url("not a url"),
            Err(BuildError::InvalidUrl { .. })
        ));
        assert!(matches!(
            parse_url("redis-cluster://127.0.0.1:7001"),
            Err(BuildError::InvalidUrl { .. })
        ));
    }

    #[cfg(not(feature = "tls"))]
    #[test]
    fn rediss_without_the_tls_feature_is_refused() {
        let err = parse_url("rediss://u:pw@127.0.0.1:6380").unwrap_err();
        assert!(matches!(err, BuildError::TlsNotEnabled(_)), "{err:?}");
        assert!(!err.to_string().contains("pw"));
    }

    /// A batch whose call fails at once (the connection task is gone) hands
    /// its results over after the queue's lock is released: delivering under
    /// it, and asking for the next batch, deadlocked the queue and the
    /// runtime. Runs on its own runtime and thread, so a deadlock shows as a
    /// timeout instead of a hung test.
    #[test]
    fn a_batch_whose_call_fails_at_once_does_not_deadlock_the_queue() {
        let cluster = Arc::new(redquorum_harness::Cluster::start(1).unwrap());
        let (done, finished) = std::sync::mpsc::channel();
        let nodes = Arc::clone(&cluster);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            let outcomes = runtime.block_on(async {
                let (config, id) = parse_url(&nodes.url(0)).unwrap();
                let node = Arc::new(Node::new(config, id, Duration::from_secs(10)));
                let connection = node.connect();
                assert!(node.wait_connected().await);
                node.load_scripts().await;
                nodes.pause(0).unwrap();
                let owner = OwnerToken::random();
                let ttl = Duration::from_secs(10);
                // Each first poll sends or queues: two acquires take the
                // node's slots (sent to the paused node), the release queues.
                let first = node.acquire("k1", owner, ttl);
                let second = node.acquire("k2", owner, ttl);
                let release = node.release("k3", owner);
                let mut all = std::pin::pin!(futures::future::join3(first, second, release));
                assert!(futures::poll!(all.as_mut()).is_pending());
                // The connection task stops: the calls in flight fail, and
                // the queued release's call then fails at once.
                connection.abort();
                let (first, second, release) = all.await;
                vec![first, second, release]
            });
            drop(runtime);
            let _ = done.send(outcomes);
        });
        let outcomes = finished
            .recv_timeout(Duration::from_secs(30))
            .expect("no answer in 30 s: the batch queue deadlocked");
        assert!(outcomes.iter().all(|o| !o.is_acquired()), "{outcomes:?}");
        cluster.resume(0).unwrap();
    }

    #[cfg(feature = "tls")]
    #[test]
    fn rediss_with_the_tls_feature_configures_tls() {
        let (config, id) = parse_url("rediss://127.0.0.1:6380").unwrap();
        assert!(config.tls.is_some());
        assert_eq!(id.port(), 6380);
    }
}
