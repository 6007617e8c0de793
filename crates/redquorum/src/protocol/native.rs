//! The one operation a server runs without the lock script: the plain
//! lock's acquire of one name that proposes no fencing token (the default
//! lock's acquire, until its handle asks for a token), sent as
//! `SET key token NX PX ttl GET`.
//!
//! Why: a call of the lock script costs a node about three times the
//! native `SET NX PX` (docs/performance.md, *Where the time goes*), and this
//! acquire is most of a default lock's calls. `GET` tells what stood there
//! when the key was taken: nothing (granted), a string (another plain
//! hold: taken; our own token, from this server under another name or an
//! earlier call, is the script's to renew), or, by refusing with `WRONGTYPE`, a lock record (a hash:
//! another kind's holds, or a record left with only expired holds, which
//! only the full acquire of the script can judge). `NX` with `GET` needs
//! Redis 7.0 (Valkey 7.2): an older server refuses the syntax, and then
//! gets the script. In either case the command wrote nothing, so the
//! operation may go again as the script (node/batch/batcher_call.rs decides
//! when: never after a later call went out on the connection).

use fred::error::{Error as FredError, ErrorKind};
use fred::types::Value;

use crate::protocol::op::{Code, Op, Reply};

/// The arguments of `SET` for `op`, if it has a native form: a plain
/// acquire of one lock key, with no fence key (it proposes no token).
pub(crate) fn set_args(op: &Op) -> Option<Vec<Value>> {
    if op.code != Code::PlainAcquire {
        return None;
    }
    let ([key], [token, ttl]) = (op.keys.as_slice(), op.args.as_slice()) else {
        return None;
    };
    Some(vec![
        Value::from(key.clone()),
        token.clone(),
        Value::from_static_str("NX"),
        Value::from_static_str("PX"),
        ttl.clone(),
        Value::from_static_str("GET"),
    ])
}

/// What a native acquire's answer means.
#[derive(Debug)]
pub(crate) enum Native {
    /// The operation's answer, as the script would give it: 1 granted, 0
    /// taken, or the error.
    Answered(Reply),
    /// The command wrote nothing and the script must decide; if it cannot
    /// be sent again, `otherwise` is the answer.
    NeedsScript {
        otherwise: Reply,
        /// The server does not know `SET ... NX ... GET` (older than 7.0):
        /// send it the script from now on.
        unsupported: bool,
    },
}

/// Reads the answer to [`set_args`]' `SET` of `op`.
pub(crate) fn answer(op: &Op, result: Result<Value, FredError>) -> Native {
    match result {
        // Nothing stood there: set.
        Ok(Value::Null) => Native::Answered(Ok(Value::Integer(1))),
        // Our own token: the same server under a second name, or an
        // earlier call of ours. The script grants it again and renews its
        // expiry, which `NX` did not (and the vote rules then judge it).
        Ok(holder) if op.args.first().is_some_and(|token| *token == holder) => {
            Native::NeedsScript {
                otherwise: Ok(Value::Integer(0)),
                unsupported: false,
            }
        }
        // Another plain hold stood there, and stays.
        Ok(_) => Native::Answered(Ok(Value::Integer(0))),
        // A lock record: someone else's holds, unless they all expired;
        // taken, if the full acquire cannot be asked.
        Err(error) if error.details().starts_with("WRONGTYPE") => Native::NeedsScript {
            otherwise: Ok(Value::Integer(0)),
            unsupported: false,
        },
        Err(error) if is_syntax_refusal(&error) => Native::NeedsScript {
            otherwise: Err(error),
            unsupported: true,
        },
        Err(error) => Native::Answered(Err(error)),
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

    fn plain_acquire(keys: &[&str], args: Vec<Value>) -> Op {
        Op {
            code: Code::PlainAcquire,
            keys: keys.iter().map(|k| (*k).into()).collect(),
            args,
        }
    }

    #[test]
    fn only_a_plain_acquire_of_one_name_without_a_fence_key_is_native() {
        let args = || vec![Value::from("tok"), Value::from(2000)];
        let native = set_args(&plain_acquire(&["lock:{a}"], args())).expect("native");
        assert_eq!(native.len(), 6);
        assert_eq!(native[0].as_str().as_deref(), Some("lock:{a}"));
        assert_eq!(native[2].as_str().as_deref(), Some("NX"));
        assert_eq!(native[5].as_str().as_deref(), Some("GET"));
        // A fence key (it proposes), two names (all or nothing), another code.
        assert!(set_args(&plain_acquire(&["lock:{a}", "lock:{a}:fence"], args())).is_none());
        assert!(set_args(&plain_acquire(&["lock:{a}", "lock:{b}"], args())).is_none());
        let mut release = plain_acquire(&["lock:{a}"], args());
        release.code = Code::PlainRelease;
        assert!(set_args(&release).is_none());
    }

    #[test]
    fn answers_read_as_the_script_would_give_them() {
        let integer = |native: Native| match native {
            Native::Answered(Ok(Value::Integer(n))) => n,
            other => panic!("not an integer answer: {other:?}"),
        };
        let op = plain_acquire(&["lock:{a}"], vec![Value::from("tok"), Value::from(2000)]);
        let answer = |result| answer(&op, result);
        assert_eq!(integer(answer(Ok(Value::Null))), 1);
        assert_eq!(integer(answer(Ok(Value::from("other")))), 0);
        assert!(matches!(
            answer(Ok(Value::from("tok"))),
            Native::NeedsScript {
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
            Native::NeedsScript {
                otherwise: Ok(Value::Integer(0)),
                unsupported: false
            }
        ));
        let syntax = FredError::new(ErrorKind::Unknown, "ERR syntax error");
        assert!(matches!(
            answer(Err(syntax)),
            Native::NeedsScript {
                otherwise: Err(_),
                unsupported: true
            }
        ));
        let oom = FredError::new(ErrorKind::Unknown, "OOM command not allowed");
        assert!(matches!(answer(Err(oom)), Native::Answered(Err(_))));
    }
}
