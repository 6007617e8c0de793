//! The Lua scripts run on every node, loaded from `scripts/*.lua`.
//!
//! Scripts run by EVALSHA. They are loaded (SCRIPT LOAD) every time a node's
//! connection comes up, and a node that still answers NOSCRIPT (its cache was
//! flushed, or it restarted before the reload) gets the same call as EVAL:
//! one more round trip, which also caches the script there again.

use std::sync::LazyLock;

use fred::error::Error as FredError;
use fred::interfaces::LuaInterface;
use fred::types::scripts::Script;
use fred::types::{FromValue, MultipleKeys, Value};

use crate::mutants::{self, Mutant};

/// The plain lock's acquire, extend and release, one or several per call
/// (group commit, see batch.rs): one integer per operation, 1 done, 0 not
/// ours / taken, -1 wrong type.
pub(crate) static LOCK_OPS: LazyLock<Script> = LazyLock::new(|| {
    Script::from_lua(mutants::lock_ops_source(include_str!(
        "scripts/lock_ops.lua"
    )))
});

/// Reentrant: add one hold of an owner if no other owner holds the key: 1 / 0.
pub(crate) static REENTRANT_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/reentrant_acquire.lua")));

/// Reentrant: remove one hold, delete the key at the last: 1 / 0.
pub(crate) static REENTRANT_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/reentrant_release.lua")));

/// Reentrant: owner-checked expiry renewal: 1 / 0.
pub(crate) static REENTRANT_EXTEND: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/reentrant_extend.lua")));

/// Read-write: add a reader unless a writer holds or waits: 1 / 0.
pub(crate) static RW_READ_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/rw_read_acquire.lua")));

/// Read-write: remove a reader: 1 / 0.
pub(crate) static RW_READ_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/rw_read_release.lua")));

/// Read-write: renew a live reader's expiry: 1 / 0.
pub(crate) static RW_READ_EXTEND: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/rw_read_extend.lua")));

/// Read-write: take the write lock, or record writer intent: 1 / 0.
pub(crate) static RW_WRITE_ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/rw_write_acquire.lua")));

/// Read-write: owner-checked delete of the writer (and its intent): 1 / 0.
pub(crate) static RW_WRITE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/rw_write_release.lua")));

/// Read-write: owner-checked writer expiry renewal: 1 / 0.
pub(crate) static RW_WRITE_EXTEND: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/rw_write_extend.lua")));

/// Fencing, round 1: propose `max(stored + 1, node_ms * 1024)` and store it.
pub(crate) static FENCE_PROPOSE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/fence_propose.lua")));

/// Fencing, round 2: raise the stored counter to the chosen token.
pub(crate) static FENCE_COMMIT: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/fence_commit.lua")));

/// Run on the protected resource, not on the lock nodes: write if the token is current.
pub(crate) static FENCED_WRITE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/fenced_write.lua")));

/// Every script the lock nodes run, for loading on connect (not FENCED_WRITE:
/// it runs on the protected store).
pub(crate) static ALL: [&LazyLock<Script>; 12] = [
    &LOCK_OPS,
    &REENTRANT_ACQUIRE,
    &REENTRANT_RELEASE,
    &REENTRANT_EXTEND,
    &RW_READ_ACQUIRE,
    &RW_READ_RELEASE,
    &RW_READ_EXTEND,
    &RW_WRITE_ACQUIRE,
    &RW_WRITE_RELEASE,
    &RW_WRITE_EXTEND,
    &FENCE_PROPOSE,
    &FENCE_COMMIT,
];

/// Runs `script` by EVALSHA, or by EVAL when the server answers NOSCRIPT (its
/// cache was flushed, or it restarted): one more round trip, which also
/// caches the script there again.
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
        Err(e) if e.details().starts_with("NOSCRIPT") => {
            let body = script.lua().map(|lua| lua.to_string()).unwrap_or_default();
            if mutants::is_active(Mutant::NoscriptAfterUnwind) {
                mutants::late_fallback(client, &body).await;
            }
            client.eval(body, keys, args).await
        }
        reply => reply,
    }
}
