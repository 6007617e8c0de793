//! A claim: one hold on one resource, as data. Every lock kind is a claim
//! of some [`Kind`]; from it come the operations sent to every node to take
//! it, renew it, give it back and fence it (`ops.lua` does the rest). This
//! is the only place that knows what a kind sends.

use std::time::Duration;

use fred::types::Value;

use crate::fence::FenceToken;
use crate::keys::ResourceKeys;
use crate::op::{Code, Op};
use crate::token::OwnerToken;

/// The lock kinds, as `ops.lua` records them. Only readers share, and the
/// holds of one reentrant owner; anything else excludes everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The plain exclusive lock.
    Lock,
    /// The writer of a read-write lock: exclusive.
    Write,
    /// A reader: shares with other readers only.
    Read,
    /// One hold of a reentrant owner: shares with that owner's other holds.
    Reentrant,
}

impl Kind {
    /// The name `ops.lua` stores, and metrics and `status` show.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Lock => "lock",
            Kind::Write => "write",
            Kind::Read => "read",
            Kind::Reentrant => "reentrant",
        }
    }
}

/// One hold on one resource.
#[derive(Debug)]
pub(crate) struct Claim {
    pub(crate) resource: String,
    pub(crate) keys: ResourceKeys,
    pub(crate) kind: Kind,
    /// This hold's own token, stored on the nodes.
    pub(crate) token: OwnerToken,
    pub(crate) ttl: Duration,
    /// The reentrant owner id (`''` for other kinds).
    group: Value,
    /// A waiting writer records its intent while readers hold (new readers
    /// then wait), so a stream of readers cannot starve it.
    waits: bool,
    /// Encoded once: sent with every operation.
    token_value: Value,
    ttl_value: Value,
}

impl Claim {
    pub(crate) fn new(
        kind: Kind,
        resource: &str,
        keys: ResourceKeys,
        token: OwnerToken,
        ttl: Duration,
    ) -> Self {
        Self {
            resource: resource.to_owned(),
            keys,
            kind,
            token,
            ttl,
            group: Value::from_static_str(""),
            waits: false,
            token_value: Value::from(token.to_string()),
            ttl_value: Value::from(millis(ttl)),
        }
    }

    /// A hold of the reentrant owner `owner_id`.
    pub(crate) fn of_owner(mut self, owner_id: &str) -> Self {
        self.group = Value::from(owner_id);
        self
    }

    /// A writer that keeps waiting (its failed attempts record its intent).
    pub(crate) fn waiting(mut self) -> Self {
        self.waits = true;
        self
    }

    /// Take (or join) the lock; with `fenced`, each node that grants it also
    /// proposes a fencing token in the same call.
    pub(crate) fn acquire(&self, fenced: bool) -> Op {
        let flags = match (fenced, self.waits) {
            (false, false) => "",
            (true, false) => "p",
            (false, true) => "i",
            (true, true) => "pi",
        };
        self.op(
            Code::Acquire,
            true,
            vec![
                Value::from_static_str(self.kind.name()),
                self.token_value.clone(),
                self.ttl_value.clone(),
                self.group.clone(),
                Value::from_static_str(flags),
            ],
        )
    }

    /// Owner-checked: our hold lasts another TTL.
    pub(crate) fn extend(&self) -> Op {
        self.op(
            Code::Extend,
            false,
            vec![self.token_value.clone(), self.ttl_value.clone()],
        )
    }

    /// Owner-checked: remove our hold, and our writer intent.
    pub(crate) fn release(&self) -> Op {
        self.give_back(true)
    }

    /// Undo a failed attempt: as `release`, but a waiting writer keeps its
    /// intent for its next attempt.
    pub(crate) fn unwind(&self) -> Op {
        self.give_back(!self.waits)
    }

    /// Owner-checked: raise the fence counter to `token` while we hold.
    pub(crate) fn commit(&self, token: FenceToken) -> Op {
        self.op(
            Code::Commit,
            true,
            vec![
                self.token_value.clone(),
                Value::from(token.get().to_string()),
            ],
        )
    }

    /// Propose a fencing token on its own (when the acquire could not).
    pub(crate) fn propose(&self) -> Op {
        Op {
            code: Code::Propose,
            keys: vec![self.keys.fence.clone()],
            args: Vec::new(),
        }
    }

    fn give_back(&self, drop_intent: bool) -> Op {
        let drop_intent = Value::from_static_str(if drop_intent { "1" } else { "0" });
        self.op(
            Code::Release,
            false,
            vec![self.token_value.clone(), drop_intent],
        )
    }

    fn op(&self, code: Code, with_fence: bool, args: Vec<Value>) -> Op {
        let mut keys = vec![self.keys.lock.clone()];
        if with_fence {
            keys.push(self.keys.fence.clone());
        }
        Op { code, keys, args }
    }
}

/// Milliseconds for expiries, at least 1 (a zero TTL is refused at build time).
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)
}

/// What the inspect operation reads: see [`inspect`].
pub(crate) fn inspect(keys: &ResourceKeys) -> Op {
    Op {
        code: Code::Inspect,
        keys: vec![keys.lock.clone(), keys.fence.clone()],
        args: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(kind: Kind) -> Claim {
        Claim::new(
            kind,
            "r",
            ResourceKeys::new("lock:", "r"),
            OwnerToken::random(),
            Duration::from_millis(1500),
        )
    }

    fn texts(op: &Op) -> Vec<String> {
        op.args.iter().map(|a| a.as_string().unwrap()).collect()
    }

    #[test]
    fn an_acquire_names_its_kind_token_ttl_owner_and_flags() {
        let plain = claim(Kind::Lock);
        let args = texts(&plain.acquire(true));
        assert_eq!(args[0], "lock");
        assert_eq!(args[1], plain.token.to_string());
        assert_eq!(args[2], "1500");
        assert_eq!(args[3..], ["".to_owned(), "p".to_owned()]);
        let writer = claim(Kind::Write).waiting();
        assert_eq!(texts(&writer.acquire(false))[4], "i");
        let held = claim(Kind::Reentrant).of_owner("abc");
        assert_eq!(
            texts(&held.acquire(true))[3..],
            ["abc".to_owned(), "p".to_owned()]
        );
    }

    #[test]
    fn a_waiting_writer_keeps_its_intent_when_unwinding_but_not_when_releasing() {
        let writer = claim(Kind::Write).waiting();
        assert_eq!(texts(&writer.unwind())[1], "0");
        assert_eq!(texts(&writer.release())[1], "1");
        let once = claim(Kind::Write);
        assert_eq!(texts(&once.unwind())[1], "1");
    }

    #[test]
    fn operations_carry_the_keys_they_touch() {
        let c = claim(Kind::Lock);
        assert_eq!(c.acquire(false).keys.len(), 2);
        assert_eq!(c.commit(FenceToken::new(9)).keys.len(), 2);
        assert_eq!(c.extend().keys, vec![c.keys.lock.clone()]);
        assert_eq!(c.release().keys, vec![c.keys.lock.clone()]);
        assert_eq!(c.propose().keys, vec![c.keys.fence.clone()]);
    }
}
