//! One Redis server we vote through: a single master, or one shard primary
//! of a cluster master (node/cluster.rs). Its client, the batcher its
//! operations go through, why its connection is down (if it is), and the
//! cached answers of its health probes.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use fred::clients::Client;
use fred::error::Error as FredError;
use fred::interfaces::{ClientLike, EventInterface};
use fred::prelude::Config;
use fred::types::ConnectHandle;
use fred::types::{ClusterHash, CustomCommand, Value};
use tokio::task::JoinHandle;

use crate::health::eligibility::{Eligibility, IdSeen};
use crate::health::ineligible::Ineligible;
use crate::health::node_health::NodeHealth;
use crate::node::batch::Batcher;
use crate::node::batch::replication_id::{self, TellReplicationId};
use crate::node::connection;
use crate::node::link::{self, Link};
use crate::node::probe;
use crate::node::script::{self, LockScript};
use crate::node_id::NodeId;
use crate::protocol::op::{self, Op, Reply};

/// How every server of a `Redlock` is run: timeouts and the vote rules'
/// settings (health/eligibility.rs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServerSettings {
    pub(crate) node_timeout: Duration,
    /// The delayed-restart rule's max TTL (`None`: off).
    pub(crate) max_ttl: Option<Duration>,
    /// Time between two health probes.
    pub(crate) interval: Duration,
    /// The clock rule: drift allowance, and how long a node that misbehaved
    /// (or a shard primary that took over) stays refused: the longest lease.
    pub(crate) clock_rule: (f64, Duration),
    pub(crate) check_clock: bool,
}

/// An operation's answer, and the server that gave it (whose vote rules
/// decide whether the vote counts: node/nodes.rs); `None` when it reached
/// no server (a cluster's first slot map never came: node/cluster.rs).
pub(crate) struct Answered {
    pub(crate) reply: Reply,
    pub(crate) by: Option<Arc<Server>>,
}

/// One Redis server: a single master, or a cluster master's shard primary.
pub(crate) struct Server {
    id: NodeId,
    client: Client,
    /// Whether it connects with TLS (`rediss://`, or a config with TLS).
    tls: bool,
    /// The lock script it runs (node/script.rs).
    script: &'static LockScript,
    /// Why its connection is down, if it is.
    link: Arc<Link>,
    /// The one way operations reach the node (group commit).
    batcher: Arc<Batcher>,
    /// Cached probe results and the vote rules.
    eligibility: Arc<Eligibility>,
}

impl fmt::Debug for Server {
    // fred's Client Debug is not used: only the id, which never has a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server").field("id", &self.id).finish()
    }
}

impl Server {
    /// A server with lock-safe client settings (node/connection.rs), not yet
    /// connected, running `script` (the lock script, or its cluster form).
    pub(crate) fn new(
        config: Config,
        id: NodeId,
        settings: &ServerSettings,
        script: &'static LockScript,
    ) -> Self {
        let tls = connection::is_tls(&config);
        let client = connection::client(config, settings.node_timeout);
        // Subscribed before connect(), so the first connection counts as one.
        let mut eligibility = Eligibility::new(client.reconnect_rx());
        eligibility.configure(settings.max_ttl, settings.interval);
        if settings.check_clock {
            eligibility.configure_clock(settings.clock_rule.0, settings.clock_rule.1);
        }
        if script.is_cluster_form() {
            eligibility.configure_oldest(crate::health::oldest_server::OLDEST_CLUSTER_SERVER);
            eligibility.configure_promotions(settings.clock_rule.1);
        }
        let eligibility = Arc::new(eligibility);
        let link = Arc::new(Link::new(id.clone(), client.clone(), settings.node_timeout));
        let batcher = Batcher::new(
            client.clone(),
            settings.node_timeout,
            Arc::clone(&link),
            script,
        );
        let batcher = if script.is_cluster_form() {
            batcher
                .telling_replication_ids(tell_replication_id(id.clone(), Arc::clone(&eligibility)))
        } else {
            batcher
        };
        Self {
            batcher: Arc::new(batcher),
            id,
            tls,
            client,
            script,
            link,
            eligibility,
        }
    }

    pub(crate) fn id(&self) -> &NodeId {
        &self.id
    }

    /// Why the node is down, or `None` while it is up (node/link.rs).
    pub(crate) fn down(&self) -> Option<FredError> {
        self.link.down()
    }

    /// Starts one operation now (sent, or queued: see [`Batcher::enter`])
    /// and returns its answer to come; or, on a node known to be down
    /// (node/link.rs), says why without waiting. What undoes earlier operations
    /// (a release, an unwind), and a move ([`Op::reaches_down_nodes`]), is
    /// still sent to a down node, and completes in
    /// the background: a stopped node that resumes applies it after the
    /// operations sent before it on the same connection. Anything else is
    /// not sent at all, which is always safe.
    pub(crate) fn submit(
        &self,
        op: Op,
    ) -> Result<impl Future<Output = Reply> + Send + use<>, FredError> {
        if let Some(cause) = self.link.down() {
            if op.reaches_down_nodes() {
                drop(self.batcher.enter(op));
            }
            return Err(cause);
        }
        let entered = self.batcher.enter(op);
        let link = Arc::clone(&self.link);
        Ok(async move { entered.answer().await.map_err(|error| link.explain(error)) })
    }

    /// Runs `op` (a release following a cluster's `ASK`: node/cluster.rs)
    /// right after `ASKING`, in one pipeline so nothing comes between
    /// them; as EVAL, so a cold script cache on this server does not matter.
    pub(crate) async fn run_asking(&self, op: &Op) -> Reply {
        let pipeline = self.client.pipeline();
        let asking = CustomCommand::new_static("ASKING", ClusterHash::FirstKey, false);
        let eval = CustomCommand::new_static("EVAL", ClusterHash::FirstKey, false);
        let (keys, args) = self.script.encode([op]);
        let mut eval_args: Vec<Value> = vec![
            script::body(&self.script.script).into(),
            (keys.len() as i64).into(),
        ];
        eval_args.extend(keys.into_iter().map(Value::from));
        eval_args.extend(args);
        let queued: Result<(), FredError> = async {
            pipeline.custom::<(), Value>(asking, vec![]).await?;
            pipeline.custom::<(), Value>(eval, eval_args).await
        }
        .await;
        queued?;
        match pipeline.try_all::<Value>().await.pop() {
            Some(Ok(answer)) => {
                // The cluster form's answer ends with the replication id.
                let (answer, id) = replication_id::split(answer);
                self.tell_replication_id().tell(id.as_deref());
                op::decode(answer, 1).pop().unwrap_or_else(|| {
                    Err(FredError::new(
                        fred::error::ErrorKind::Protocol,
                        "no answer for the operation",
                    ))
                })
            }
            Some(Err(error)) => Err(self.link.explain(error)),
            None => Err(FredError::new(
                fred::error::ErrorKind::Protocol,
                "no answer for the pipeline",
            )),
        }
    }

    /// The keys matching `pattern` (a SCAN glob), up to about `limit` of
    /// them, in at most `max_calls` SCAN calls (an operator's listing:
    /// bounded, never a KEYS).
    pub(crate) async fn scan(
        &self,
        pattern: &str,
        limit: usize,
        max_calls: usize,
    ) -> Result<Vec<String>, fred::error::Error> {
        let scan = fred::types::CustomCommand::new_static("SCAN", None, false);
        let mut cursor = "0".to_owned();
        let mut found = Vec::new();
        for _ in 0..max_calls {
            let args = vec![cursor.as_str(), "MATCH", pattern, "COUNT", "1000"];
            let (next, keys): (String, Vec<String>) = self
                .client
                .custom(scan.clone(), args)
                .await
                .map_err(|error| self.link.explain(error))?;
            found.extend(keys);
            cursor = next;
            if cursor == "0" || found.len() >= limit {
                break;
            }
        }
        Ok(found)
    }

    /// Starts the connection task and the background tasks that keep the
    /// node's script loaded and its health probed; commands queue until the
    /// connection is up.
    pub(crate) fn start(&self) -> (ConnectHandle, [JoinHandle<()>; 3]) {
        let link = link::spawn_link_watch(&self.client, self.tls, Arc::downgrade(&self.link));
        let loader = script::spawn_loader(self.client.clone(), self.id.clone(), self.script);
        let prober = probe::spawn_prober(
            self.client.clone(),
            self.id.clone(),
            Arc::downgrade(&self.eligibility),
            self.eligibility.interval(),
        );
        (self.client.connect(), [link, loader, prober])
    }

    /// Waits for the first connection attempt (see [`connection::wait_connected`]);
    /// when it succeeded, loads the script and probes the node, so the first
    /// operations neither race the loader nor vote unprobed.
    pub(crate) async fn first_connect(&self) -> bool {
        let up = connection::wait_connected(&self.client).await;
        if up {
            script::load(&self.client, &self.id, self.script).await;
            probe::probe(&self.client, &self.id, &self.eligibility).await;
            if self.script.is_cluster_form() {
                // The id every later answer's is compared with.
                let id = replication_id::read(&self.client).await;
                self.tell_replication_id().tell(id.as_deref());
            }
        }
        up
    }

    /// Tells this shard primary's vote rules a replication id it answered with.
    fn tell_replication_id(&self) -> TellReplicationId {
        tell_replication_id(self.id.clone(), Arc::clone(&self.eligibility))
    }

    /// Opens a hand-off window on the node's batcher (see [`Batcher::hold`]).
    pub(crate) fn hold_batches(&self) {
        self.batcher.hold();
    }

    /// Closes a hand-off window (see [`Batcher::unhold`]).
    pub(crate) fn unhold_batches(&self) {
        self.batcher.unhold();
    }

    /// Marks the server as a cluster shard primary that took over its slots
    /// now (node/cluster.rs): its votes are refused for the longest lease.
    pub(crate) fn became_primary(&self, stable_for: Duration) {
        self.eligibility.became_primary(stable_for);
    }

    /// The server's client, for what is not a lock operation (a cluster's
    /// topology query).
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// Why the node's votes are refused now, by its own state (node/nodes.rs
    /// adds the rule that spans nodes). Cheap: no I/O.
    pub(crate) fn refusal(&self) -> Option<Ineligible> {
        self.eligibility.refusal()
    }

    /// The server's run id, once probed.
    pub(crate) fn run_id(&self) -> Option<String> {
        self.eligibility.run_id()
    }

    /// The node's health as of its last probe, and whether it is down now.
    pub(crate) fn health(&self) -> NodeHealth {
        let mut health = self.eligibility.snapshot();
        health.down = self.link.down().map(|cause| cause.details().to_owned());
        health
    }

    /// Resolves once no call of ours is in flight on the node (see
    /// [`Batcher::drained`]); owns what it needs, so it may outlive the node.
    pub(crate) fn drained(&self) -> impl Future<Output = ()> + Send + use<> {
        let batcher = Arc::clone(&self.batcher);
        async move { batcher.drained().await }
    }

    /// Asks the server to close our connection (bounded by the node timeout).
    pub(crate) async fn quit(&self) {
        let _ = self.client.quit().await;
    }
}

/// Tells the cluster shard primary `id`'s vote rules each replication id
/// read (health/eligibility.rs `saw_replication_id`), and says when one
/// refuses it.
fn tell_replication_id(id: NodeId, eligibility: Arc<Eligibility>) -> TellReplicationId {
    TellReplicationId::new(move |replication_id| {
        match eligibility.saw_replication_id(replication_id) {
            IdSeen::Same | IdSeen::Unreadable { first: false } => {}
            IdSeen::Changed { from, to } => {
                tracing::warn!(node = %id, %from, %to, "a cluster shard primary's replication id changed (promoted since it was last read): its votes are refused for the longest lease");
            }
            IdSeen::Unreadable { first: true } => {
                tracing::warn!(node = %id, "a cluster shard primary's replication id cannot be read (INFO denied?): a failover cannot be ruled out, so its votes are refused until it can be read and the longest lease has passed");
            }
        }
    })
}
