//! The script cache: the one Lua script every lock operation runs in (its
//! parts in `protocol/scripts/ops/`, joined at build time), and the fenced
//! write run on a protected store.
//!
//! Scripts run by EVALSHA and are loaded (SCRIPT LOAD) each time a node's
//! connection comes up. A node that answers NOSCRIPT (its cache was
//! flushed, or it restarted before the reload) is a case the batcher
//! decides about (node/batch/batcher.rs): an acquire must never be sent again after
//! its attempt was decided.

use std::sync::LazyLock;

use fred::clients::Client;
use fred::error::Error as FredError;
use fred::interfaces::{EventInterface, LuaInterface};
use fred::types::scripts::Script;
use fred::types::{FromValue, Key, MultipleKeys, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use crate::node_id::NodeId;
use crate::protocol::op::{self, Op, lua_codes};

/// The lock script in one of its two forms, with how a call of it carries
/// its operations.
#[derive(Debug)]
pub(crate) struct LockScript {
    pub(crate) script: Script,
    /// The cluster form: KEYS declares the first operation's first key only.
    cluster: bool,
    /// The plain release alone on a connection (`protocol/alone.rs`), in
    /// the single-server form only (operations alone on a cluster master's
    /// shard go as the lock script, which treats a key the shard does not
    /// serve as a redirection).
    pub(crate) plain_release: Option<Script>,
}

impl LockScript {
    /// Whether this is the cluster form (for a cluster master's shards).
    pub(crate) fn is_cluster_form(&self) -> bool {
        self.cluster
    }

    /// The keys and arguments of one call carrying `ops`, in order.
    ///
    /// A Redis Cluster refuses a call whose declared keys span two slots,
    /// even with the script's `allow-cross-slot-keys` flag (which covers
    /// keys the script reaches without declaring them). So the cluster form
    /// declares only the first operation's first key (the server checks
    /// that it serves its slot) and passes every operation's
    /// keys at the end of ARGV, followed by their count; a prelude makes
    /// them KEYS again. A key the server does not serve then fails its own
    /// operation ("non local key"), which node/cluster.rs treats as a
    /// redirection.
    pub(crate) fn encode<'a>(
        &self,
        ops: impl IntoIterator<Item = &'a Op>,
    ) -> (Vec<Key>, Vec<Value>) {
        let ops: Vec<&Op> = ops.into_iter().collect();
        let (keys, mut args) = op::encode(ops.iter().copied());
        if !self.cluster {
            return (keys, args);
        }
        let declared = ops
            .first()
            .and_then(|op| op.keys.first())
            .cloned()
            .into_iter()
            .collect();
        let count = keys.len() as i64;
        args.extend(keys.into_iter().map(Value::from));
        args.push(Value::from(count));
        (declared, args)
    }
}

/// The lock script's body: its parts (`protocol/scripts/ops/`, one concern
/// each) and the operation codes (`protocol/op.rs`), joined at build time in
/// the order they run, so each form of the script the nodes cache (by its
/// SHA1) is one fixed text. Each form puts its prelude first.
macro_rules! ops_body {
    () => {
        concat!(
            include_str!("../protocol/scripts/ops/prelude.lua"),
            lua_codes!(),
            include_str!("../protocol/scripts/ops/answer.lua"),
            include_str!("../protocol/scripts/ops/plain.lua"),
            include_str!("../protocol/scripts/ops/dispatch.lua"),
            include_str!("../protocol/scripts/ops/record.lua"),
            include_str!("../protocol/scripts/ops/fence.lua"),
            include_str!("../protocol/scripts/ops/hold.lua"),
            include_str!("../protocol/scripts/ops/release.lua"),
            include_str!("../protocol/scripts/ops/handover.lua"),
            include_str!("../protocol/scripts/ops/force.lua"),
            include_str!("../protocol/scripts/ops/inspect.lua"),
            include_str!("../protocol/scripts/ops/finish.lua"),
        )
    };
}

/// The plain release's own script, for a release alone on a single
/// server's connection (`protocol/alone.rs`).
pub(crate) const PLAIN_RELEASE_BODY: &str = include_str!("../protocol/scripts/plain_release.lua");

/// Every lock operation of every kind, one or several per call.
pub(crate) static OPS: LazyLock<LockScript> = LazyLock::new(|| LockScript {
    script: Script::from_lua(single_form()),
    cluster: false,
    plain_release: Some(Script::from_lua(PLAIN_RELEASE_BODY)),
});

/// [`OPS`] for a cluster master's shard primaries (Redis 7.0 or later):
/// the flag lets one call reach the keys of several slots that the shard
/// serves, so group commit works per shard; see [`LockScript::encode`].
pub(crate) static OPS_CLUSTER: LazyLock<LockScript> = LazyLock::new(|| LockScript {
    script: Script::from_lua(concat!(
        "#!lua flags=allow-cross-slot-keys\n",
        include_str!("../protocol/scripts/cluster_prelude.lua"),
        ops_body!()
    )),
    cluster: true,
    plain_release: None,
});

/// The single-server form's text: announces by `PUBLISH` (the cluster form,
/// by `SPUBLISH`: see its prelude).
pub(crate) const fn single_form() -> &'static str {
    concat!(
        include_str!("../protocol/scripts/single_prelude.lua"),
        ops_body!()
    )
}

/// Run on the protected resource, not on the lock nodes: write if the token is current.
pub(crate) static FENCED_WRITE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("../protocol/scripts/fenced_write.lua")));

/// Whether `error` is the server saying it does not have the script.
pub(crate) fn is_noscript(error: &FredError) -> bool {
    error.details().starts_with("NOSCRIPT")
}

/// The script's source, for EVAL (which also caches it on the server).
pub(crate) fn body(script: &Script) -> String {
    script.lua().map(|lua| lua.to_string()).unwrap_or_default()
}

/// Runs `script` by EVALSHA, or by EVAL when the server answers NOSCRIPT.
/// Only for calls that are safe to repeat late (not lock operations: see
/// the module docs), such as the fenced write on a protected store.
pub(crate) async fn eval_cached<R, C, K>(
    script: &Script,
    client: &C,
    keys: K,
    args: Vec<Value>,
) -> Result<R, FredError>
where
    R: FromValue,
    C: LuaInterface + Send + Sync,
    K: Into<MultipleKeys> + Send,
{
    // Kept for the EVAL fallback: fred's keys and values share their bytes,
    // so these copies cost a vector each, not the strings again.
    let keys: MultipleKeys = keys.into();
    match script.evalsha(client, keys.clone(), args.clone()).await {
        Err(e) if is_noscript(&e) => client.eval(body(script), keys, args).await,
        reply => reply,
    }
}

/// Loads the lock script (and the plain release's) into the node's cache;
/// an error is left to the NOSCRIPT handling of the calls.
pub(crate) async fn load(client: &Client, node: &NodeId, script: &LockScript) {
    for script in std::iter::once(&script.script).chain(&script.plain_release) {
        if let Err(error) = script.load(client).await {
            tracing::debug!(%node, %error, "script load failed");
        }
    }
}

/// Reloads the script after every (re)connection of `client`, for as long
/// as the client lives.
pub(crate) fn spawn_loader(
    client: Client,
    node: NodeId,
    script: &'static LockScript,
) -> JoinHandle<()> {
    // Subscribed before connect(), so the first connection's event is seen too.
    let mut reconnects = client.reconnect_rx();
    tokio::spawn(async move {
        loop {
            match reconnects.recv().await {
                Ok(_) | Err(RecvError::Lagged(_)) => load(&client, &node, script).await,
                Err(RecvError::Closed) => return,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_form_publishes_sharded_and_only_there() {
        let cluster = OPS_CLUSTER.script.lua().expect("cluster form");
        for form in [single_form(), cluster] {
            // Releases, news, losses (answer.lua) and asks (handover.lua).
            assert_eq!(form.matches("redis.pcall(PUBLISH, ").count(), 4);
            assert!(!form.contains("'publish',") && !form.contains("'spublish',"));
        }
        assert!(single_form().contains("local PUBLISH = 'publish'\n"));
        assert!(cluster.contains("local PUBLISH = 'spublish'\n"));
        assert!(!cluster.contains("'publish'"));
    }

    /// Every code of `protocol/op.rs` is defined once in the script and
    /// runs a function of it; no other code is defined.
    #[test]
    fn the_script_defines_and_runs_every_code_of_the_table() {
        let body = single_form();
        assert_eq!(body.matches("local OP_").count(), op::Code::ALL.len());
        let wires: std::collections::BTreeSet<_> = op::Code::ALL.iter().map(|c| c.wire()).collect();
        assert_eq!(wires.len(), op::Code::ALL.len(), "two codes share a letter");
        for code in op::Code::ALL {
            let name = format!("OP_{}", code.lua_name());
            let definition = format!("local {name} = '{}'\n", code.wire());
            assert_eq!(body.matches(&definition).count(), 1, "{name}");
            assert!(
                body.contains(&format!("[{name}] = function(")),
                "{name} runs nothing"
            );
        }
    }

    #[test]
    fn the_cluster_form_declares_one_key_and_carries_every_key_in_argv() {
        let op = |key: &str| Op {
            code: op::Code::PlainRelease,
            keys: vec![key.into(), format!("{key}:fence").into()],
            args: vec![Value::from("token")],
        };
        let ops = [op("lock:{a}"), op("lock:{b}")];
        let (keys, args) = OPS.encode(&ops);
        assert_eq!(keys.len(), 4);
        let (declared, cluster_args) = OPS_CLUSTER.encode(&ops);
        assert_eq!(declared, vec![Key::from("lock:{a}")]);
        assert_eq!(cluster_args.len(), args.len() + 4 + 1);
        assert_eq!(cluster_args.last(), Some(&Value::from(4)));
    }
}
