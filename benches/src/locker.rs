//! What a workload drives: the `Locker` trait, redquorum behind it, and the
//! floor (a raw fred fan-out of the same scripts, no lock logic).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fred::clients::Client;
use fred::interfaces::ClientLike;
use fred::prelude::{Config, ConnectionConfig, PerformanceConfig, ReconnectPolicy};
use fred::types::Value;
use fred::types::scripts::Script;
use redquorum::{Lock, Redlock};

/// A lock library as a workload sees it: take a resource (waiting while it
/// is held, with the library's own waiting strategy) and give it back.
pub trait Locker: Send + Sync + 'static {
    /// What a successful acquire hands back, for the release.
    type Held: Send + 'static;

    /// Takes `resource`, waiting (the library's way) while another holds it.
    fn acquire(&self, resource: &str) -> impl Future<Output = Result<Self::Held, String>> + Send;

    /// Releases what `acquire` returned.
    fn release(&self, held: Self::Held) -> impl Future<Output = Result<(), String>> + Send;

    /// The commands this library sends itself, as named by `INFO
    /// commandstats`; everything else seen there ran inside its scripts.
    fn client_commands(&self) -> &'static [&'static str];
}

/// redquorum: `Redlock::lock` then `Lock::release`.
#[derive(Debug, Clone)]
pub struct RedquorumLocker(pub Redlock);

impl Locker for RedquorumLocker {
    type Held = Lock;

    async fn acquire(&self, resource: &str) -> Result<Lock, String> {
        self.0.lock(resource).await.map_err(|e| e.to_string())
    }

    async fn release(&self, held: Lock) -> Result<(), String> {
        held.release().await.map(|_| ()).map_err(|e| e.to_string())
    }

    fn client_commands(&self) -> &'static [&'static str] {
        &[
            "evalsha",
            "eval",
            "script|load",
            "subscribe",
            "unsubscribe",
            "ping",
        ]
    }
}

/// The floor: exactly the commands of one cycle, sent concurrently to all N
/// nodes with fred (one client per node, redquorum's settings): redquorum's
/// lock script with one acquire on all N (proposing a fencing token, as the
/// default lock does), then with one release on all N, one call per
/// operation (no group commit). No quorum, validity, unwind or retry; it
/// does not wait for a held resource.
#[derive(Debug)]
pub struct Floor {
    clients: Vec<Client>,
    ttl_ms: i64,
    counter: AtomicU64,
}

/// redquorum's script for every lock operation, here always with one operation per call.
static OPS: std::sync::LazyLock<Script> = std::sync::LazyLock::new(|| {
    Script::from_lua(include_str!("../../crates/redquorum/src/scripts/ops.lua"))
});

impl Floor {
    /// Connects one client per URL and loads the two scripts.
    ///
    /// # Errors
    ///
    /// A message naming the first node that could not be reached.
    ///
    /// # Cancel safety
    ///
    /// Dropping it drops the half-made clients and their connections.
    pub async fn connect(
        urls: &[String],
        node_timeout: Duration,
        ttl: Duration,
    ) -> Result<Self, String> {
        let mut clients = Vec::with_capacity(urls.len());
        for url in urls {
            let config = Config::from_url(url).map_err(|e| format!("{url}: {e}"))?;
            let client = Client::new(
                config,
                Some(PerformanceConfig {
                    default_command_timeout: node_timeout,
                    ..Default::default()
                }),
                Some(ConnectionConfig {
                    max_command_attempts: 1,
                    ..Default::default()
                }),
                Some(ReconnectPolicy::new_exponential(0, 20, 1_000, 2)),
            );
            client
                .init()
                .await
                .map_err(|e| format!("{}: {e}", redact(url)))?;
            OPS.load(&client).await.map_err(|e| e.to_string())?;
            clients.push(client);
        }
        Ok(Self {
            clients,
            ttl_ms: i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX),
            counter: AtomicU64::new(0),
        })
    }

    async fn fan_out(&self, keys: Vec<String>, args: Vec<Value>) -> Result<(), String> {
        let calls = self
            .clients
            .iter()
            .map(|c| OPS.evalsha::<Vec<i64>, _, _, _>(c, keys.clone(), args.clone()));
        for reply in futures::future::join_all(calls).await {
            reply.map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

impl Locker for Floor {
    type Held = (String, String);

    async fn acquire(&self, resource: &str) -> Result<(String, String), String> {
        let token = format!("floor-{}", self.counter.fetch_add(1, Ordering::Relaxed));
        let key = format!("floor:{{{resource}}}");
        // One acquire: code, 2 keys, 5 arguments (kind, token, ttl, owner, flags).
        let args = vec![
            Value::from_static_str("a"),
            Value::from(2),
            Value::from(5),
            Value::from_static_str("lock"),
            Value::from(token.as_str()),
            Value::from(self.ttl_ms),
            Value::from_static_str(""),
            Value::from_static_str("p"),
        ];
        self.fan_out(vec![key.clone(), format!("{key}:fence")], args)
            .await?;
        Ok((key, token))
    }

    async fn release(&self, (key, token): (String, String)) -> Result<(), String> {
        // One release: code, 1 key, 2 arguments (token, drop intent).
        let args = vec![
            Value::from_static_str("r"),
            Value::from(1),
            Value::from(2),
            Value::from(token),
            Value::from_static_str("1"),
        ];
        self.fan_out(vec![key], args).await
    }

    fn client_commands(&self) -> &'static [&'static str] {
        &["evalsha", "eval", "script|load", "ping"]
    }
}

/// `url` without its password, for messages.
pub(crate) fn redact(url: &str) -> String {
    match url.rsplit_once('@') {
        Some((_, host)) => format!("redis://***@{host}"),
        None => url.to_owned(),
    }
}
