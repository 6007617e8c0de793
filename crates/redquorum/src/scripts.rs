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

/// Every script, for loading on connect.
pub(crate) static ALL: [&LazyLock<Script>; 3] = [&ACQUIRE, &RELEASE, &EXTEND];
