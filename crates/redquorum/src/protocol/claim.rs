//! A claim: one hold, as data. Every lock kind is a claim of some [`Kind`]
//! on one resource (or on several at once: a multi-resource lock, a
//! semaphore permit and its slot); from it come the operations sent to
//! every node to take it, renew it, give it back and fence it (`ops.lua`
//! does the rest, all or nothing on each node). This is the only place
//! that knows what a kind sends.

use std::time::Duration;

use fred::types::{Key, Value};

use crate::mutants::{self, Mutant};
use crate::protocol::fence::FenceToken;
use crate::protocol::keys::ResourceKeys;
use crate::protocol::op::{Code, Op};
use crate::protocol::token::OwnerToken;

/// The lock kinds, as `ops.lua` records them. Only readers share, permits
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
    /// The name `ops.lua` stores, and metrics and `status` show.
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
    /// lock-delay or owner group): its operations are `ops.lua`'s plain ones,
    /// on a string record.
    plain: bool,
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
            plain: kind == Kind::Lock && mutants::plain_path(),
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

    /// A writer that keeps waiting (its failed attempts record its intent).
    pub(crate) fn waiting(mut self) -> Self {
        self.waits = true;
        self.plain = false;
        self
    }

    /// Take (or join) the locks; with `fenced`, each node that grants them
    /// also proposes a fencing token in the same call.
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
        if mutants::is_active(Mutant::RevivingExtend) {
            return self.acquire(false);
        }
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
    /// intent for its next attempt.
    pub(crate) fn unwind(&self) -> Op {
        self.give_back(!self.waits)
    }

    /// Owner-checked: raise the fence counters to `token` while we hold.
    pub(crate) fn commit(&self, token: FenceToken) -> Op {
        Op {
            code: Code::Commit,
            keys: self
                .lock_keys()
                .chain(self.fences.iter().cloned())
                .collect(),
            args: vec![
                self.token_value.clone(),
                Value::from(token.get().to_string()),
                Value::from(self.locks.len() as i64),
            ],
        }
    }

    /// Propose a fencing token on its own (when the acquire could not).
    pub(crate) fn propose(&self) -> Op {
        Op {
            code: Code::Propose,
            keys: self.fences.clone(),
            args: Vec::new(),
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

/// Read-only: who holds the resource of `keys` (`Redlock::inspect`).
pub(crate) fn inspect(keys: &ResourceKeys) -> Op {
    Op {
        code: Code::Inspect,
        keys: vec![keys.lock.clone(), keys.fence.clone()],
        args: Vec::new(),
    }
}

/// An operator's force-release of the resource of `keys`, which also raises
/// its fence counter (`Redlock::force_release`).
pub(crate) fn force_release(keys: &ResourceKeys) -> Op {
    Op {
        code: Code::ForceRelease,
        keys: vec![keys.lock.clone(), keys.fence.clone()],
        args: Vec::new(),
    }
}

/// Raises the fence counter of `keys` to `token`, whoever holds (a commit
/// of no lock: the second round of a force-release).
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
    fn a_plain_hold_uses_the_plain_operations_with_its_token_and_ttl() {
        let plain = claim(Kind::Lock);
        let acquire = plain.acquire(true);
        assert_eq!(acquire.code, Code::PlainAcquire);
        assert_eq!(texts(&acquire), [plain.token.to_string(), "1500".into()]);
        let keys = vec![plain.keys.lock.clone(), plain.keys.fence.clone()];
        assert_eq!(acquire.keys, keys);
        // Unfenced: no fence key.
        assert_eq!(plain.acquire(false).keys, vec![plain.keys.lock.clone()]);
        assert_eq!(plain.extend().code, Code::PlainExtend);
        assert_eq!(texts(&plain.extend())[1], "1500");
        assert_eq!(plain.release().code, Code::PlainRelease);
        assert_eq!(plain.unwind().code, Code::PlainRelease);
        // Anything a string record cannot carry takes the full operations.
        let noted = claim(Kind::Lock).with_meta("h:1:note");
        let delayed = claim(Kind::Lock).with_delay(Duration::from_secs(1));
        let two = claim(Kind::Lock).and(&ResourceKeys::new("lock:", "s"), Kind::Lock, true);
        for full in [noted, delayed, two, claim(Kind::Write), claim(Kind::Leader)] {
            assert_eq!(full.acquire(true).code, Code::Acquire, "{full:?}");
            assert_eq!(full.extend().code, Code::Extend);
            assert_eq!(full.release().code, Code::Release);
        }
        // A lock-delay of zero is no lock-delay.
        let undelayed = claim(Kind::Lock).with_delay(Duration::ZERO);
        assert_eq!(undelayed.acquire(true).code, Code::PlainAcquire);
    }

    #[test]
    fn an_acquire_names_its_token_ttl_owner_flags_meta_delay_fences_and_kinds() {
        let write = claim(Kind::Write);
        let args = texts(&write.acquire(true));
        assert_eq!(args[0], write.token.to_string());
        assert_eq!(
            args[1..],
            ["1500", "", "p", "", "0", "1", "write"].map(String::from)
        );
        let keys = vec![write.keys.lock.clone(), write.keys.fence.clone()];
        assert_eq!(write.acquire(true).keys, keys);
        // Unfenced: no fence key, and 0 fences.
        assert_eq!(texts(&write.acquire(false))[6], "0");
        assert_eq!(write.acquire(false).keys.len(), 1);
        let writer = claim(Kind::Write).waiting();
        assert_eq!(texts(&writer.acquire(false))[3], "i");
        let held = claim(Kind::Reentrant)
            .of_owner("abc")
            .with_meta("h:1:note")
            .with_delay(Duration::from_secs(2));
        let args = texts(&held.acquire(true));
        let expected = ["abc", "p", "h:1:note", "2000", "1", "reentrant"].map(String::from);
        assert_eq!(args[2..8], expected);
    }

    #[test]
    fn a_claim_on_several_locks_takes_them_all_and_fences_those_asked() {
        let other = ResourceKeys::new("lock:", "s");
        let two = claim(Kind::Lock)
            .and(&other, Kind::Lock, true)
            .and_key("lock:{r}:slot:0".into(), Kind::Slot);
        let acquire = two.acquire(true);
        assert_eq!(acquire.keys.len(), 5, "3 locks, 2 fences");
        assert_eq!(
            texts(&acquire)[6..],
            ["2", "lock", "lock", "slot"].map(String::from)
        );
        assert_eq!(two.extend().keys.len(), 3);
        assert_eq!(two.release().keys.len(), 3);
        let commit = two.commit(FenceToken::new(7));
        assert_eq!(commit.keys.len(), 5);
        assert_eq!(texts(&commit)[2], "3");
        assert_eq!(two.propose().keys.len(), 2);
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
        assert_eq!(c.acquire(true).keys.len(), 2);
        assert_eq!(c.commit(FenceToken::new(9)).keys.len(), 2);
        assert_eq!(c.extend().keys, vec![c.keys.lock.clone()]);
        assert_eq!(c.release().keys, vec![c.keys.lock.clone()]);
        assert_eq!(c.propose().keys, vec![c.keys.fence.clone()]);
    }
}
