//! An operation alone on a connection, in a form cheaper for the node than
//! a call of the lock script, whose preamble (defining its operations)
//! costs a node more than the default lock's operations themselves
//! (docs/performance.md, *Where the time goes*). Two operations have one,
//! on single servers:
//!
//! - the plain lock's acquire of one name that proposes no fencing token
//!   (the default lock's acquire, until its handle asks for a token): the
//!   native `SET key token NX PX ttl GET`. `GET` tells what stood there
//!   when the key was taken: nothing (granted), a string (another plain
//!   hold: taken; our own token, from this server under another name or an
//!   earlier call, is the script's to renew), or, by refusing with
//!   `WRONGTYPE`, a lock record (a hash: another kind's holds, or a record
//!   left with only expired holds, which only the full acquire of the
//!   script can judge). `NX` with `GET` needs Redis 7.0 (Valkey 7.2): an
//!   older server refuses the syntax, and then gets the script;
//! - the plain lock's release of a hold on its string record (a token's
//!   write-back leaves the string as it is; a lock record there, a hash,
//!   is the lock script's to release): `protocol/scripts/plain_release.lua`,
//!   the same compare-and-delete and announcement, alone.
//!
//! When the form leaves the decision to the lock script, it wrote nothing,
//! so the operation may go again as the script (node/batch/batcher_call.rs
//! decides when: an acquire never after a later call went out on the
//! connection).

use fred::error::{Error as FredError, ErrorKind};
use fred::types::{Key, Value};

use crate::protocol::op::{Code, Op, Reply};

/// The form of an operation alone on a connection.
#[derive(Debug)]
pub(crate) enum Alone {
    /// `SET` with these arguments.
    Set(Vec<Value>),
    /// The plain release's own script with these keys and arguments.
    Release(Vec<Key>, Vec<Value>),
}

/// `op`'s form alone on a connection, if it has one: a plain acquire of
/// one lock key with no fence key (it proposes no token), or a plain
/// release of one lock key.
pub(crate) fn form(op: &Op) -> Option<Alone> {
    match (op.code, op.keys.as_slice(), op.args.as_slice()) {
        (Code::PlainAcquire, [key], [token, ttl]) => Some(Alone::Set(vec![
            Value::from(key.clone()),
            token.clone(),
            Value::from_static_str("NX"),
            Value::from_static_str("PX"),
            ttl.clone(),
            Value::from_static_str("GET"),
        ])),
        (Code::PlainRelease, [key], [token]) => {
            Some(Alone::Release(vec![key.clone()], vec![token.clone()]))
        }
        _ => None,
    }
}

/// What an answer in a form alone means.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The operation's answer, as the script would give it.
    Answered(Reply),
    /// The form wrote nothing and the lock script must decide; if it cannot
    /// be sent again, `otherwise` is the answer.
    NeedsScript {
        otherwise: Reply,
        /// The server does not know `SET ... NX ... GET` (older than 7.0):
        /// send it the script from now on.
        unsupported: bool,
    },
}

/// Reads the answer to `op`'s [`Alone::Set`].
pub(crate) fn set_answer(op: &Op, result: Result<Value, FredError>) -> Answer {
    let script = |otherwise, unsupported| Answer::NeedsScript {
        otherwise,
        unsupported,
    };
    match result {
        // Nothing stood there: set.
        Ok(Value::Null) => Answer::Answered(Ok(Value::Integer(1))),
        // Our own token: the same server under a second name, or an
        // earlier call of ours. The script grants it again and renews its
        // expiry, which `NX` did not (and the vote rules then judge it).
        Ok(holder) if op.args.first().is_some_and(|token| *token == holder) => {
            script(Ok(Value::Integer(0)), false)
        }
        // Another plain hold stood there, and stays.
        Ok(_) => Answer::Answered(Ok(Value::Integer(0))),
        // A lock record: someone else's holds, unless they all expired;
        // taken, if the full acquire cannot be asked.
        Err(error) if error.details().starts_with("WRONGTYPE") => {
            script(Ok(Value::Integer(0)), false)
        }
        Err(error) if is_syntax_refusal(&error) => script(Err(error), true),
        Err(error) => Answer::Answered(Err(error)),
    }
}

/// Reads the answer to an [`Alone::Release`] (its script found, see
/// `plain_release.lua`).
pub(crate) fn release_answer(answer: Value) -> Answer {
    match answer {
        Value::Integer(-1) => Answer::NeedsScript {
            otherwise: Ok(Value::Integer(0)),
            unsupported: false,
        },
        Value::Integer(_) => Answer::Answered(Ok(answer)),
        other => Answer::Answered(Err(FredError::new(
            ErrorKind::Protocol,
            format!("the plain release answered {other:?}"),
        ))),
    }
}

/// A server that does not know the command's syntax (`NX` with `GET`
/// before Redis 7.0, `GET` before 6.2).
fn is_syntax_refusal(error: &FredError) -> bool {
    matches!(
        error.kind(),
        ErrorKind::Unknown | ErrorKind::InvalidArgument
    ) && error.details().contains("syntax error")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(code: Code, keys: &[&str], args: Vec<Value>) -> Op {
        Op {
            code,
            keys: keys.iter().map(|k| (*k).into()).collect(),
            args,
        }
    }

    fn acquire(keys: &[&str]) -> Op {
        op(
            Code::PlainAcquire,
            keys,
            vec![Value::from("tok"), Value::from(2000)],
        )
    }

    #[test]
    fn a_plain_acquire_of_one_name_without_a_fence_key_is_a_native_set() {
        let Some(Alone::Set(set)) = form(&acquire(&["lock:{a}"])) else {
            panic!("not a SET");
        };
        let words: Vec<String> = set.iter().map(|v| v.as_string().unwrap()).collect();
        assert_eq!(words, ["lock:{a}", "tok", "NX", "PX", "2000", "GET"]);
        // A fence key (it proposes), two names (all or nothing).
        assert!(form(&acquire(&["lock:{a}", "lock:{a}:fence"])).is_none());
        assert!(form(&acquire(&["lock:{a}", "lock:{b}"])).is_none());
    }

    #[test]
    fn only_a_plain_release_of_one_name_has_its_own_script() {
        let release = op(Code::PlainRelease, &["lock:{a}"], vec![Value::from("tok")]);
        assert!(matches!(form(&release), Some(Alone::Release(keys, args))
            if keys.len() == 1 && args == [Value::from("tok")]));
        let both = op(
            Code::PlainRelease,
            &["lock:{a}", "lock:{b}"],
            vec![Value::from("tok")],
        );
        assert!(form(&both).is_none());
        for code in [
            Code::Release,
            Code::PlainExtend,
            Code::Acquire,
            Code::Commit,
        ] {
            assert!(form(&op(code, &["lock:{a}"], vec![Value::from("tok")])).is_none());
        }
    }

    fn integer(answer: Answer) -> i64 {
        match answer {
            Answer::Answered(Ok(Value::Integer(n))) => n,
            other => panic!("not an integer answer: {other:?}"),
        }
    }

    #[test]
    fn set_answers_read_as_the_script_would_give_them() {
        let op = acquire(&["lock:{a}"]);
        let answer = |result| set_answer(&op, result);
        assert_eq!(integer(answer(Ok(Value::Null))), 1);
        assert_eq!(integer(answer(Ok(Value::from("other")))), 0);
        assert!(matches!(
            answer(Ok(Value::from("tok"))),
            Answer::NeedsScript {
                otherwise: Ok(Value::Integer(0)),
                unsupported: false
            }
        ));
        let wrongtype = FredError::new(
            ErrorKind::InvalidArgument,
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        );
        assert!(matches!(
            answer(Err(wrongtype)),
            Answer::NeedsScript {
                otherwise: Ok(Value::Integer(0)),
                unsupported: false
            }
        ));
        let syntax = FredError::new(ErrorKind::Unknown, "ERR syntax error");
        assert!(matches!(
            answer(Err(syntax)),
            Answer::NeedsScript {
                otherwise: Err(_),
                unsupported: true
            }
        ));
        let oom = FredError::new(ErrorKind::Unknown, "OOM command not allowed");
        assert!(matches!(answer(Err(oom)), Answer::Answered(Err(_))));
    }

    #[test]
    fn a_release_that_found_a_lock_record_is_the_scripts() {
        assert_eq!(integer(release_answer(Value::Integer(1))), 1);
        assert_eq!(integer(release_answer(Value::Integer(0))), 0);
        assert!(matches!(
            release_answer(Value::Integer(-1)),
            Answer::NeedsScript {
                otherwise: Ok(Value::Integer(0)),
                unsupported: false
            }
        ));
        assert!(matches!(
            release_answer(Value::from("x")),
            Answer::Answered(Err(_))
        ));
    }
}
