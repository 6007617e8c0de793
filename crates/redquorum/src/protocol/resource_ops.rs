//! Operations on a resource whoever holds it, for the operator's calls
//! (`admin/`, `quorum/force_release.rs`): an inspection, an ask to let go,
//! and a force-release's three rounds. A holder's own operations are its
//! claim's (`claim.rs`).

use fred::types::Value;

use crate::protocol::keys::ResourceKeys;
use crate::protocol::op::{Code, Op};

/// Read-only: who holds the resource of `keys` (`Redlock::inspect`).
pub(crate) fn inspect(keys: &ResourceKeys) -> Op {
    Op {
        code: Code::Inspect,
        keys: vec![keys.lock.clone(), keys.fence.clone()],
        args: Vec::new(),
    }
}

/// Asks the holders of the resource of `keys` to let go, tagged `tag`
/// (`Redlock::ask_release`): announced on the lock's ask channel.
pub(crate) fn ask(keys: &ResourceKeys, tag: &str) -> Op {
    Op {
        code: Code::Ask,
        keys: vec![keys.lock.clone()],
        args: vec![Value::from(tag)],
    }
}

/// Read-only, a force-release's first round: what it may remove from the
/// resource of `keys` on a node (the lock script's `g`: one entry per hold, a
/// writer's intent, a lock-delay).
pub(crate) fn force_read(keys: &ResourceKeys) -> Op {
    Op {
        code: Code::ForceRead,
        keys: vec![keys.lock.clone()],
        args: Vec::new(),
    }
}

/// An operator's force-release of the resource of `keys`: removes the
/// entries its first round `found` (on any node) and nothing else, so that,
/// landing late on a node, it cannot oust a later holder; proposes a fence
/// counter (`Redlock::force_release`).
pub(crate) fn force_release(keys: &ResourceKeys, found: &[String]) -> Op {
    Op {
        code: Code::ForceRelease,
        keys: vec![keys.lock.clone(), keys.fence.clone()],
        args: found
            .iter()
            .map(|entry| Value::from(entry.as_str()))
            .collect(),
    }
}

/// Raises the fence counter of `keys` to `token`, whoever holds (a commit
/// of no lock: the third round of a force-release).
pub(crate) fn raise_fence(keys: &ResourceKeys, token: i64) -> Op {
    Op {
        code: Code::Commit,
        keys: vec![keys.fence.clone()],
        args: vec![
            Value::from_static_str(""),
            Value::from(token.to_string()),
            Value::from(0),
        ],
    }
}
