//! The script cache: the one Lua script every lock operation runs in
//! (`protocol/scripts/ops.lua`), and the fenced write run on a protected store.
//!
//! Scripts run by EVALSHA and are loaded (SCRIPT LOAD) each time a node's
//! connection comes up. A node that answers NOSCRIPT (its cache was
//! flushed, or it restarted before the reload) is a case the batcher
//! decides about (node/batcher.rs): an acquire must never be sent again after
//! its attempt was decided.

use std::sync::LazyLock;

use fred::clients::Client;
use fred::error::Error as FredError;
use fred::interfaces::{EventInterface, LuaInterface};
use fred::types::scripts::Script;
use fred::types::{FromValue, MultipleKeys, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use crate::node_id::NodeId;

/// Every lock operation of every kind, one or several per call.
pub(crate) static OPS: LazyLock<Script> = LazyLock::new(|| {
    Script::from_lua(crate::mutants::ops_source(include_str!(
        "../protocol/scripts/ops.lua"
    )))
});

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

/// Loads the lock script into the node's cache; an error is left to the
/// NOSCRIPT handling of the calls.
pub(crate) async fn load(client: &Client, node: &NodeId) {
    if let Err(error) = OPS.load(client).await {
        tracing::debug!(%node, %error, "script load failed");
    }
}

/// Reloads the script after every (re)connection of `client`, for as long
/// as the client lives.
pub(crate) fn spawn_loader(client: Client, node: NodeId) -> JoinHandle<()> {
    // Subscribed before connect(), so the first connection's event is seen too.
    let mut reconnects = client.reconnect_rx();
    tokio::spawn(async move {
        loop {
            match reconnects.recv().await {
                Ok(_) | Err(RecvError::Lagged(_)) => load(&client, &node).await,
                Err(RecvError::Closed) => return,
            }
        }
    })
}
