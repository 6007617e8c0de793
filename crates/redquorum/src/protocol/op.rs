//! A per-node operation as plain data: which function of the lock script
//! (`protocol/scripts/ops/`), on which keys, with which arguments; the
//! operation codes, defined once for this crate and the script (`code_table`). Every lock kind produces these
//! (protocol/claim.rs); the node decides how to send them (alone or batched,
//! node/batch/batcher.rs), and one call carries any mix of them.

use fred::error::{Error as FredError, ErrorKind};
use fred::types::{Key, Value};

/// The operation codes, defined once: each operation's variant, its code
/// on the wire (one letter, which the script compares on every call) and its
/// name in the script (`OP_<NAME>`). Passes the table to the macro named:
/// `define_codes` makes [`Code`] of it, `lua_lines` the script's Lua.
macro_rules! code_table {
    ($($then:tt)+) => {
        $($then)+! {
            /// Take (or join) the lock; may propose a fencing token.
            Acquire = "a" as ACQUIRE,
            /// Owner-checked: make our hold last another TTL.
            Extend = "e" as EXTEND,
            /// Owner-checked: remove our hold (and our writer intent).
            Release = "r" as RELEASE,
            /// Owner-checked: raise the fence counter to our fencing token.
            Commit = "c" as COMMIT,
            /// Owner-checked, read-only: propose a fencing token while we hold.
            Propose = "p" as PROPOSE,
            /// Owner-checked: set the hold's owner information (a leader's value).
            SetMeta = "m" as SET_META,
            /// Read-only, an operator's force-release's first round: what it may
            /// remove (holds, a writer's intent, a lock-delay) as each node has it.
            ForceRead = "g" as FORCE_READ,
            /// An operator's call: remove what its first round found, propose a
            /// fence counter.
            ForceRelease = "f" as FORCE_RELEASE,
            /// Read-only: who holds the lock.
            Inspect = "i" as INSPECT,
            /// The plain lock's acquire (one lock, no owner information, lock-delay
            /// or owner group) on a string record; `Acquire`'s answer.
            PlainAcquire = "l" as PLAIN_ACQUIRE,
            /// The plain lock's release: `Release` on a string record.
            PlainRelease = "u" as PLAIN_RELEASE,
            /// The plain lock's extend: `Extend` on a string record.
            PlainExtend = "n" as PLAIN_EXTEND,
            /// Owner-checked on the old token: the hold becomes a new
            /// owner's (a lease ticket adopted).
            Move = "v" as MOVE,
            /// Owner-checked on the adopter's token: a failed adoption's
            /// hold becomes the old owner's again, keeping its expiry (at
            /// most the ticket's validity).
            MoveBack = "b" as MOVE_BACK,
            /// Asks the holders to let go (announced on the lock's ask
            /// channel); changes nothing.
            Ask = "k" as ASK,
        }
    };
}

/// [`Code`] and its wire and script names, from [`code_table`].
macro_rules! define_codes {
    ($($(#[doc = $doc:literal])+ $code:ident = $wire:literal as $lua:ident,)+) => {
        /// The function of the lock script an operation runs.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Code {
            $($(#[doc = $doc])+ $code,)+
        }

        impl Code {
            /// Every code, in the table's order.
            #[cfg(test)]
            pub(crate) const ALL: &[Code] = &[$(Code::$code,)+];

            /// Its code on the wire (the script's `OP_<NAME>`).
            pub(crate) fn wire(self) -> &'static str {
                match self {
                    $(Code::$code => $wire,)+
                }
            }

            /// Its name in the script, without the `OP_`.
            #[cfg(test)]
            pub(crate) fn lua_name(self) -> &'static str {
                match self {
                    $(Code::$code => stringify!($lua),)+
                }
            }
        }
    };
}

code_table!(define_codes);

/// The script's codes as Lua source, one `local OP_<NAME> = '<code>'` line
/// per code, from [`code_table`].
macro_rules! lua_lines {
    ($($(#[doc = $doc:literal])+ $code:ident = $wire:literal as $lua:ident,)+) => {
        concat!(
            "-- The operation codes (protocol/op.rs, `code_table`).\n",
            $("local OP_", stringify!($lua), " = '", $wire, "'\n",)+
            "\n",
        )
    };
}

/// The script's codes as Lua source (`lua_lines`), a literal for the
/// `concat!` that joins the script's body (node/script.rs), so the script
/// and this crate cannot disagree on a code.
macro_rules! lua_codes {
    () => {
        $crate::protocol::op::code_table!($crate::protocol::op::lua_lines)
    };
}
pub(crate) use {code_table, lua_codes, lua_lines};

impl Code {
    /// Whether it gives a hold back: its vote counts from any node that
    /// answers, even one whose votes for new holds are refused.
    pub(crate) fn releases(self) -> bool {
        matches!(self, Code::Release | Code::PlainRelease)
    }
}

/// One operation on one node.
#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub(crate) code: Code,
    pub(crate) keys: Vec<Key>,
    pub(crate) args: Vec<Value>,
}

impl Op {
    /// Whether it can create a hold. Such an operation must never be sent
    /// again (a copy) after its attempt was decided: the attempt's unwind is
    /// ordered after the original on the connection, and a late copy would
    /// overtake that. The original itself may still go late, as long as it
    /// goes before the unwind (a cluster's first map: cluster/first_map.rs).
    pub(crate) fn creates_hold(&self) -> bool {
        matches!(self.code, Code::Acquire | Code::PlainAcquire | Code::Move)
    }

    /// The owner token it may create a hold for (see [`Op::creates_hold`]).
    pub(crate) fn hold_token(&self) -> Option<&Value> {
        match self.code {
            Code::Acquire | Code::PlainAcquire => self.args.first(),
            Code::Move => self.args.get(1),
            _ => None,
        }
    }

    /// The owner token whose hold it removes: a release's (an unwind's, a
    /// failed adoption's move back).
    pub(crate) fn released_token(&self) -> Option<&Value> {
        match self.code {
            Code::Release | Code::PlainRelease | Code::MoveBack => self.args.first(),
            _ => None,
        }
    }

    /// Whether it must be sent even when nobody waits for its answer any
    /// more: a release undoes what earlier operations did (so does an
    /// operator's force-release), and an extend keeps the hold alive on the
    /// nodes that answered after the quorum (or it lapses there, and one
    /// node failure later the lease is lost); a move (a ticket adopted)
    /// takes the old holder's hold off the nodes that answered after the
    /// quorum (unsent, it would stay there to its TTL, nobody's).
    /// Anything else nobody waits for is dropped unsent (nothing to undo).
    pub(crate) fn must_run(&self) -> bool {
        matches!(
            self.code,
            Code::Release
                | Code::Extend
                | Code::ForceRelease
                | Code::PlainRelease
                | Code::PlainExtend
                | Code::Move
                | Code::MoveBack
        )
    }

    /// Whether it only reads (an inspection, a force-release's first round,
    /// a proposal while held): nothing is lost if it is never sent.
    pub(crate) fn only_reads(&self) -> bool {
        matches!(self.code, Code::Inspect | Code::ForceRead | Code::Propose)
    }

    /// Whether it undoes what earlier operations did (a release, an unwind,
    /// a force-release, a failed adoption's move back): sent even to a node
    /// known to be down, which may still apply those earlier operations
    /// when it resumes (node/server.rs).
    pub(crate) fn undoes(&self) -> bool {
        matches!(
            self.code,
            Code::Release | Code::ForceRelease | Code::PlainRelease | Code::MoveBack
        )
    }

    /// Whether it is sent even to a node known to be down: what undoes,
    /// and a move (a ticket adopted), which takes the old holder's hold off
    /// that node when it answers again (else it stays there, nobody's, to
    /// its TTL); a failed adoption's unwind follows it there.
    pub(crate) fn reaches_down_nodes(&self) -> bool {
        self.undoes() || self.code == Code::Move
    }
}

impl Op {
    /// An operation of `code` on one key, for unit tests of the queue.
    #[cfg(test)]
    pub(crate) fn for_test(code: Code) -> Self {
        Op {
            code,
            keys: vec!["k".into()],
            args: Vec::new(),
        }
    }
}

/// The keys and arguments of one call of the lock script carrying `ops`, in order.
pub(crate) fn encode<'a>(ops: impl IntoIterator<Item = &'a Op>) -> (Vec<Key>, Vec<Value>) {
    let mut keys = Vec::new();
    let mut args = Vec::new();
    for op in ops {
        args.push(Value::from_static_str(op.code.wire()));
        args.push(Value::from(op.keys.len() as i64));
        args.push(Value::from(op.args.len() as i64));
        args.extend(op.args.iter().cloned());
        keys.extend(op.keys.iter().cloned());
    }
    (keys, args)
}

/// What one operation answered: its value, or its own error.
pub(crate) type Reply = Result<Value, FredError>;

/// Splits the answer of a call carrying `count` operations into one reply
/// per operation; an answer of another shape fails them all.
pub(crate) fn decode(answer: Value, count: usize) -> Vec<Reply> {
    match answer {
        Value::Array(answers) if answers.len() == count => {
            answers.into_iter().map(decode_one).collect()
        }
        other => {
            let error = FredError::new(
                ErrorKind::Protocol,
                format!("the lock script answered {other:?} for {count} operations"),
            );
            vec![Err(error); count]
        }
    }
}

/// An integer or an array is a result; the string `E<message>` is the
/// operation's own error, classified as Redis's own errors are.
fn decode_one(answer: Value) -> Reply {
    match answer {
        Value::Integer(_) | Value::Array(_) => Ok(answer),
        other => {
            let text = other.as_string().unwrap_or_default();
            let message = text.strip_prefix('E').unwrap_or(&text);
            Err(redis_error(message))
        }
    }
}

/// A Redis error reply's text as fred would classify it.
fn redis_error(message: &str) -> FredError {
    let kind = if message.starts_with("WRONGTYPE") {
        ErrorKind::InvalidArgument
    } else if message.starts_with("NOAUTH") || message.starts_with("WRONGPASS") {
        ErrorKind::Auth
    } else {
        ErrorKind::Unknown
    };
    FredError::new(kind, message.to_owned())
}

/// The integer an operation answered (every operation but `Inspect` and
/// `ForceRead`, which answer arrays).
pub(crate) fn integer(reply: Reply) -> Result<i64, FredError> {
    match reply? {
        Value::Integer(n) => Ok(n),
        other => Err(FredError::new(
            ErrorKind::Protocol,
            format!("expected an integer, got {other:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(code: Code, keys: &[&str], args: &[&str]) -> Op {
        Op {
            code,
            keys: keys.iter().map(|k| Key::from(*k)).collect(),
            args: args.iter().map(|a| Value::from(*a)).collect(),
        }
    }

    #[test]
    fn a_batch_lists_each_operation_with_its_counts_and_concatenates_the_keys() {
        let ops = [
            op(Code::Acquire, &["l", "f"], &["lock", "t", "10", "", "p"]),
            op(Code::Release, &["m"], &["u", "0"]),
        ];
        let (keys, args) = encode(&ops);
        assert_eq!(keys, vec![Key::from("l"), Key::from("f"), Key::from("m")]);
        let args: Vec<String> = args.iter().map(|a| a.as_string().unwrap()).collect();
        assert_eq!(
            args,
            [
                "a", "2", "5", "lock", "t", "10", "", "p", "r", "1", "2", "u", "0"
            ]
        );
    }

    #[test]
    fn each_operation_gets_its_own_result_or_error() {
        let answer = Value::Array(vec![
            Value::Integer(1),
            Value::from("EOOM command not allowed when used memory > 'maxmemory'."),
            Value::from("EWRONGTYPE Operation against a key holding the wrong kind of value"),
            Value::Array(vec![Value::from("lock")]),
        ]);
        let replies = decode(answer, 4);
        assert_eq!(integer(replies[0].clone()).unwrap(), 1);
        let oom = replies[1].clone().unwrap_err();
        assert!(oom.details().starts_with("OOM"), "{oom:?}");
        let wrong = replies[2].clone().unwrap_err();
        assert_eq!(*wrong.kind(), ErrorKind::InvalidArgument);
        assert!(replies[3].is_ok());
    }

    #[test]
    fn an_answer_of_the_wrong_length_fails_every_operation() {
        let replies = decode(Value::Array(vec![Value::Integer(1)]), 2);
        assert!(replies.iter().all(Result::is_err));
    }

    #[test]
    fn only_acquires_create_holds_and_only_releases_and_extends_must_run() {
        assert!(op(Code::Acquire, &[], &[]).creates_hold());
        assert!(op(Code::PlainAcquire, &[], &[]).creates_hold());
        assert!(op(Code::PlainRelease, &[], &[]).must_run());
        assert!(op(Code::PlainExtend, &[], &[]).must_run());
        assert!(op(Code::PlainRelease, &[], &[]).undoes());
        assert!(!op(Code::PlainExtend, &[], &[]).undoes());
        assert!(Code::Release.releases() && Code::PlainRelease.releases());
        assert!(!Code::Acquire.releases() && !Code::PlainExtend.releases());
        assert!(!op(Code::Release, &[], &[]).creates_hold());
        assert!(op(Code::Release, &[], &[]).must_run());
        assert!(op(Code::Extend, &[], &[]).must_run());
        assert!(op(Code::ForceRelease, &[], &[]).must_run());
        assert!(op(Code::Move, &[], &[]).must_run() && op(Code::Move, &[], &[]).creates_hold());
        assert!(op(Code::Release, &[], &[]).undoes() && op(Code::ForceRelease, &[], &[]).undoes());
        assert!(!op(Code::Extend, &[], &[]).undoes() && !op(Code::Acquire, &[], &[]).undoes());
        assert!(
            op(Code::Move, &[], &[]).reaches_down_nodes() && !op(Code::Move, &[], &[]).undoes()
        );
        assert!(!op(Code::Acquire, &[], &[]).reaches_down_nodes());
        // A failed adoption's move back undoes the move: it runs, reaches
        // down nodes, and is sent again after NOSCRIPT as a release is.
        let back = op(Code::MoveBack, &[], &["adopter"]);
        assert!(back.must_run() && back.undoes() && back.reaches_down_nodes());
        assert!(!back.creates_hold() && back.hold_token().is_none());
        assert!(back.released_token().is_some());
        for code in [
            Code::Acquire,
            Code::Commit,
            Code::Propose,
            Code::SetMeta,
            Code::Inspect,
        ] {
            assert!(!op(code, &[], &[]).must_run(), "{code:?}");
        }
    }

    #[test]
    fn only_the_read_only_functions_only_read() {
        let reads = [Code::Inspect, Code::ForceRead, Code::Propose];
        for &code in Code::ALL {
            let op = op(code, &[], &[]);
            assert_eq!(op.only_reads(), reads.contains(&code), "{code:?}");
            if op.only_reads() {
                assert!(
                    !op.must_run() && !op.creates_hold() && !op.undoes(),
                    "{code:?}"
                );
            }
        }
    }
}
