//! The Lua scripts run on every node, loaded from `scripts/*.lua`.
//!
//! Scripts run by EVALSHA. They are loaded (SCRIPT LOAD) every time a node's
//! connection comes up, and a node that still answers NOSCRIPT (its cache was
//! flushed, or it restarted before the reload) gets the same call as EVAL:
//! one more round trip, which also caches the script there again.

use std::sync::LazyLock;

use fred::types::scripts::Script;

/// Take the key if free (or already ours): 1 acquired, 0 taken.
pub(crate) static ACQUIRE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/acquire.lua")));

/// Owner-checked delete: 1 released, 0 not ours.
pub(crate) static RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/release.lua")));

/// Owner-checked PEXPIRE: 1 extended, 0 not ours.
pub(crate) static EXTEND: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/extend.lua")));

/// Fencing, round 1: propose `max(stored + 1, node_ms * 1024)` and store it.
pub(crate) static FENCE_PROPOSE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/fence_propose.lua")));

/// Fencing, round 2: raise the stored counter to the chosen token.
pub(crate) static FENCE_COMMIT: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/fence_commit.lua")));

/// Run on the protected resource, not on the lock nodes: write if the token is current.
pub(crate) static FENCED_WRITE: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(include_str!("scripts/fenced_write.lua")));

/// Every script the lock nodes run, for loading on connect.
pub(crate) static ALL: [&LazyLock<Script>; 5] =
    [&ACQUIRE, &RELEASE, &EXTEND, &FENCE_PROPOSE, &FENCE_COMMIT];
