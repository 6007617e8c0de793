//! A claim: one hold, as data. Every lock kind is a claim of some [`Kind`]
//! on one resource (or on several at once: a multi-resource lock, a
//! semaphore permit and its slot); from it come the operations sent to
//! every node to take it, renew it, give it back and fence it (the lock script
//! does the rest, all or nothing on each node). This is the only place
//! that knows what a kind sends.

use std::time::{Duration, SystemTime};

use fred::types::{Key, Value};

use crate::protocol::fence::FenceToken;
use crate::protocol::keys::ResourceKeys;
use crate::protocol::op::{Code, Op};
use crate::protocol::token::OwnerToken;

/// The lock kinds, as the lock script records them. Only readers share, permits
/// of a semaphore (their slots cap them), and the holds of one reentrant
/// owner; anything else excludes everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The plain exclusive lock (also a multi-resource lock).
    Lock,
    /// The writer of a read-write lock: exclusive.
    Write,
    /// A reader: shares with other readers only.
    Read,
    /// One hold of a reentrant owner: shares with that owner's other holds.
    Reentrant,
    /// A semaphore permit, on the semaphore's lock: shares with permits.
    Permit,
    /// A semaphore slot, one per permit: exclusive.
    Slot,
    /// An elected leader: exclusive, its value in its owner information.
    Leader,
}

impl Kind {
    /// The name the lock script stores, and metrics and `status` show.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Lock => "lock",
            Kind::Write => "write",
            Kind::Read => "read",
            Kind::Reentrant => "reentrant",
            Kind::Permit => "permit",
            Kind::Slot => "slot",
            Kind::Leader => "leader",
        }
    }
}

/// One hold, on one resource or several.
#[derive(Debug)]
pub(crate) struct Claim {
    /// The resource's name (for several: the names, comma-separated).
    pub(crate) resource: String,
    /// The first resource's keys: its lock key is what waiters, release
    /// notifications and `Lock::key` use.
    pub(crate) keys: ResourceKeys,
    pub(crate) kind: Kind,
    /// This hold's own token, stored on the nodes.
    pub(crate) token: OwnerToken,
    pub(crate) ttl: Duration,
    /// Every lock the hold takes, with the kind it takes it as; the fence
    /// counters of the first `fences.len()` of them.
    locks: Vec<(Key, Kind)>,
    fences: Vec<Key>,
    /// The reentrant owner id (`''` for other kinds).
    group: Value,
    /// A waiting writer records its intent while readers hold (new readers
    /// then wait), so a stream of readers cannot starve it.
    waits: bool,
    /// Owner information stored with the hold (`''` for none).
    meta: Value,
    /// The lock-delay after an unclean loss, in ms (0 for none).
    delay: Value,
    /// A plain hold (one lock of kind `Lock`, no owner information,
    /// lock-delay or owner group): its operations are the lock script's plain ones,
    /// on a string record.
    plain: bool,
    /// Encoded once: sent with every operation.
    token_value: Value,
    ttl_value: Value,
    /// The owner token the hold is moved from (a lease ticket adopted),
    /// and until when the ticket said its lease ran.
    moved_from: Option<(Value, SystemTime)>,
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
            moved_from: None,
            resource: resource.to_owned(),
            locks: vec![(keys.lock.clone(), kind)],
            fences: vec![keys.fence.clone()],
            keys,
            kind,
            token,
            ttl,
            group: Value::from_static_str(""),
            waits: false,
            meta: Value::from_static_str(""),
            delay: Value::from(0),
            plain: kind == Kind::Lock,
            token_value: Value::from(token.to_string()),
            ttl_value: Value::from(millis(ttl)),
        }
    }

    /// Also takes `keys`'s lock as `kind`, all or nothing with the others;
    /// with `fenced`, its fence counter is proposed on and written back too.
    pub(crate) fn and(mut self, keys: &ResourceKeys, kind: Kind, fenced: bool) -> Self {
        self.locks.push((keys.lock.clone(), kind));
        self.plain = false;
        if fenced {
            self.fences.push(keys.fence.clone());
        }
        self
    }

    /// Also takes the lock at `lock` (a key of the library's own, such as a
    /// semaphore slot) as `kind`, with no fence counter.
    pub(crate) fn and_key(mut self, lock: Key, kind: Kind) -> Self {
        self.locks.push((lock, kind));
        self.plain = false;
        self
    }

    /// Stores owner information with the hold (`Redlock::inspect` reads it).
    pub(crate) fn with_meta(mut self, meta: &str) -> Self {
        self.meta = Value::from(meta);
        self.plain = false;
        self
    }

    /// After an unclean loss (the hold expires unreleased), the locks stay
    /// blocked for `delay`.
    pub(crate) fn with_delay(mut self, delay: Duration) -> Self {
        if !delay.is_zero() {
            self.delay = Value::from(millis(delay));
            self.plain = false;
        }
        self
    }

    /// A hold of the reentrant owner `owner_id`.
    pub(crate) fn of_owner(mut self, owner_id: &str) -> Self {
        self.group = Value::from(owner_id);
        self.plain = false;
        self
    }

    /// A hold moved from `old` (a lease ticket adopted: the attempt is
    /// [`Claim::move_from`]), whose lease ran `until`; a failed attempt
    /// moves it back.
    pub(crate) fn adopting(mut self, old: OwnerToken, until: SystemTime) -> Self {
        self.moved_from = Some((Value::from(old.to_string()), until));
        self
    }

    /// A writer that keeps waiting (its failed attempts record its intent).
    pub(crate) fn waiting(mut self) -> Self {
        self.waits = true;
        self.plain = false;
        self
    }

    /// Take (or join) the locks; with `fenced` (proposing), each node that
    /// grants them also proposes a fencing token in the same call.
    pub(crate) fn acquire(&self, fenced: bool) -> Op {
        if self.plain {
            return Op {
                code: Code::PlainAcquire,
                keys: self.lock_keys().chain(self.fence_keys(fenced)).collect(),
                args: vec![self.token_value.clone(), self.ttl_value.clone()],
            };
        }
        let flags = match (fenced, self.waits) {
            (false, false) => "",
            (true, false) => "p",
            (false, true) => "i",
            (true, true) => "pi",
        };
        let fences = if fenced { self.fences.len() } else { 0 };
        let mut args = vec![
            self.token_value.clone(),
            self.ttl_value.clone(),
            self.group.clone(),
            Value::from_static_str(flags),
            self.meta.clone(),
            self.delay.clone(),
            Value::from(fences as i64),
        ];
        args.extend(
            self.locks
                .iter()
                .map(|(_, kind)| Value::from_static_str(kind.name())),
        );
        Op {
            code: Code::Acquire,
            keys: self.lock_keys().chain(self.fence_keys(fenced)).collect(),
            args,
        }
    }

    /// Owner-checked: our hold lasts another TTL.
    pub(crate) fn extend(&self) -> Op {
        Op {
            code: if self.plain {
                Code::PlainExtend
            } else {
                Code::Extend
            },
            keys: self.lock_keys().collect(),
            args: vec![self.token_value.clone(), self.ttl_value.clone()],
        }
    }

    /// Owner-checked: remove our hold, and our writer intent.
    pub(crate) fn release(&self) -> Op {
        self.give_back(true)
    }

    /// Undo a failed attempt: as `release`, but a waiting writer keeps its
    /// intent for its next attempt. A failed adoption moves the hold back
    /// to its old owner where it moved (released, the hold would be lost to
    /// both of two adopters that split the nodes), lasting no longer than
    /// the ticket said, as of now.
    pub(crate) fn unwind(&self) -> Op {
        let Some((old, until)) = &self.moved_from else {
            return self.give_back(!self.waits);
        };
        let left = until.duration_since(SystemTime::now()).unwrap_or_default();
        Op {
            code: Code::MoveBack,
            keys: vec![self.keys.lock.clone()],
            args: vec![
                self.token_value.clone(),
                old.clone(),
                Value::from_static_str(self.kind.name()),
                Value::from(millis(left)),
            ],
        }
    }

    /// Owner-checked: raise the fence counters to `token` while we hold.
    pub(crate) fn commit(&self, token: FenceToken) -> Op {
        Op {
            code: Code::Commit,
            keys: self.locks_and_fences(),
            args: vec![
                self.token_value.clone(),
                Value::from(token.get().to_string()),
                Value::from(self.locks.len() as i64),
            ],
        }
    }

    /// Owner-checked, read-only: propose a fencing token while we hold
    /// (`fence()` when the acquire proposed none).
    pub(crate) fn propose(&self) -> Op {
        Op {
            code: Code::Propose,
            keys: self.locks_and_fences(),
            args: vec![
                self.token_value.clone(),
                Value::from(self.locks.len() as i64),
            ],
        }
    }

    /// Owner-checked on `old`: the hold of `old` on our lock (of our kind)
    /// becomes ours, lasting our TTL (a lease ticket adopted).
    pub(crate) fn move_from(&self, old: OwnerToken) -> Op {
        Op {
            code: Code::Move,
            keys: vec![self.keys.lock.clone()],
            args: vec![
                Value::from(old.to_string()),
                self.token_value.clone(),
                self.ttl_value.clone(),
                Value::from_static_str(self.kind.name()),
            ],
        }
    }

    /// Owner-checked: store `meta` as the hold's owner information.
    pub(crate) fn set_meta(&self, meta: &str) -> Op {
        Op {
            code: Code::SetMeta,
            keys: vec![self.keys.lock.clone()],
            args: vec![self.token_value.clone(), Value::from(meta)],
        }
    }

    fn give_back(&self, drop_intent: bool) -> Op {
        if self.plain {
            return Op {
                code: Code::PlainRelease,
                keys: self.lock_keys().collect(),
                args: vec![self.token_value.clone()],
            };
        }
        let drop_intent = Value::from_static_str(if drop_intent { "1" } else { "0" });
        Op {
            code: Code::Release,
            keys: self.lock_keys().collect(),
            args: vec![self.token_value.clone(), drop_intent],
        }
    }

    fn lock_keys(&self) -> impl Iterator<Item = Key> + '_ {
        self.locks.iter().map(|(key, _)| key.clone())
    }

    /// Our locks' keys, then every fence counter: the keys of the
    /// owner-checked fencing operations.
    fn locks_and_fences(&self) -> Vec<Key> {
        self.lock_keys()
            .chain(self.fences.iter().cloned())
            .collect()
    }

    /// The fence counters an acquire proposes on: all, or none unfenced.
    fn fence_keys(&self, fenced: bool) -> impl Iterator<Item = Key> + '_ {
        let count = if fenced { self.fences.len() } else { 0 };
        self.fences[..count].iter().cloned()
    }
}

/// Milliseconds for expiries, at least 1 (a zero TTL is refused at build time).
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)
}

#[cfg(test)]
#[path = "claim_tests.rs"]
mod tests;
