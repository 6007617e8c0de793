//! The floor behind the harness's one [`Locker`] trait: a raw fred fan-out
//! of redquorum's commands, no lock logic (the library's own adapter is the
//! `redquorum-adapter` crate's `KindLocker`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fred::clients::Client;
use fred::cmd;
use fred::interfaces::ClientLike;
use fred::prelude::{Config, ConnectionConfig, PerformanceConfig, ReconnectPolicy};
use fred::types::Value;
use fred::types::scripts::Script;
use redquorum_harness::{Grant, Locker, Refusal};

/// The floor: exactly the commands of one cycle, sent concurrently to all N
/// nodes with fred (one client per node, redquorum's settings): the plain
/// lock's acquire as redquorum sends it alone to a single server (`SET NX
/// PX GET`, proposing no fencing token, as the default lock's acquire does
/// until a token is asked for) on all N, then its release alone (the plain
/// release's own script) on all N, one call per
/// operation (no group commit). No quorum, validity, unwind or retry; it
/// does not wait for a held resource.
#[derive(Debug)]
pub struct Floor {
    clients: Vec<Client>,
    ttl: Duration,
    ttl_ms: i64,
    counter: AtomicU64,
}

/// redquorum's plain release alone on a connection (its own small script).
static RELEASE: std::sync::LazyLock<Script> =
    std::sync::LazyLock::new(|| Script::from_lua(redquorum::PLAIN_RELEASE_SCRIPT_FOR_BENCHMARKS));

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
            RELEASE.load(&client).await.map_err(|e| e.to_string())?;
            clients.push(client);
        }
        Ok(Self {
            clients,
            ttl,
            ttl_ms: i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX),
            counter: AtomicU64::new(0),
        })
    }

    /// Runs one operation on every node; an error unless each node's answer
    /// passes `expected`.
    async fn fan_out(
        &self,
        keys: Vec<String>,
        args: Vec<Value>,
        expected: impl Fn(i64) -> bool,
    ) -> Result<(), String> {
        let calls = self
            .clients
            .iter()
            .map(|c| RELEASE.evalsha::<Value, _, _, _>(c, keys.clone(), args.clone()));
        for reply in futures::future::join_all(calls).await {
            match reply.map_err(|e| e.to_string())? {
                Value::Integer(answer) if expected(answer) => {}
                other => return Err(format!("unexpected answer {other:?} from the floor's call")),
            }
        }
        Ok(())
    }
}

impl Locker for Floor {
    type Held = (String, String);

    async fn acquire(&self, resource: &str) -> Result<Grant<(String, String)>, Refusal> {
        let start = Instant::now();
        let token = format!("floor-{}", self.counter.fetch_add(1, Ordering::Relaxed));
        let key = format!("floor:{{{resource}}}");
        // The plain lock's acquire as the library sends it to a single server
        // (`protocol/alone.rs`): `SET key token NX PX ttl GET`; granted: nil
        // (nothing stood there).
        let calls = self.clients.iter().map(|client| {
            let args: Vec<Value> = vec![
                key.as_str().into(),
                token.as_str().into(),
                "NX".into(),
                "PX".into(),
                self.ttl_ms.into(),
                "GET".into(),
            ];
            client.custom::<Value, Value>(cmd!("SET"), args)
        });
        for reply in futures::future::join_all(calls).await {
            match reply {
                Ok(Value::Null) => {}
                other => {
                    let why = format!("unexpected answer {other:?} to the floor's SET");
                    return Err(Refusal::new("unavailable", why));
                }
            }
        }
        let deadline = start + self.ttl;
        Ok(Grant::new((key, token.clone()), token, deadline))
    }

    async fn release(&self, (key, token): (String, String)) -> Result<(), String> {
        // The plain lock's release alone (`protocol/scripts/plain_release.lua`): 1 key, the token.
        let args = vec![Value::from(token)];
        // 1: the hold was there and is removed.
        self.fan_out(vec![key], args, |answer| answer == 1).await
    }

    fn client_commands(&self) -> &'static [&'static str] {
        &["set", "evalsha", "eval", "script|load", "ping"]
    }
}

/// `url` without its password, for messages.
pub(crate) fn redact(url: &str) -> String {
    match url.rsplit_once('@') {
        Some((_, host)) => format!("redis://***@{host}"),
        None => url.to_owned(),
    }
}
