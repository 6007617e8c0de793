//! One call of the lock script on a node's connection (node/batch/batcher.rs): sent,
//! answered, and sent again after a NOSCRIPT answer. A call of one
//! operation with a native form (`protocol/native.rs`) goes as that
//! command; when the server leaves the decision to the script (a lock
//! record at the key, or a server too old for the syntax) the operation
//! goes again as the script, by the rule of a NOSCRIPT answer.
//!
//! A call carrying an operation that must run (a release, an unwind, an
//! extend, a move: [`Op::must_run`]) is followed to its end even after its caller
//! stopped waiting. fred's command timeout cannot do that: a command whose
//! timeout passed before fred's connection task wrote it is dropped
//! unwritten (the task starved of CPU, or stuck behind a large write to a
//! stopped node), so an unwind would be lost while the acquire sent before
//! it lands; and a NOSCRIPT answer that comes after the timeout would never
//! be sent again. So such a call goes without fred's timeout: the node
//! timeout bounds only how long its caller waits, and the rest of the call
//! (the answer, the resend) completes in the background, owed to the
//! node until it ends (`Batcher::drained`, which `shutdown()` waits for
//! up to the node timeout). It ends when the node answers or the
//! connection fails (fred sends a command once). Other
//! calls keep fred's timeout: an acquire not written yet when its caller
//! gave up is better never sent.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use fred::error::{Error as FredError, ErrorKind};
use fred::interfaces::ClientLike;
use fred::types::config::Options;
use fred::types::{ClusterHash, CustomCommand, Key, Value};
use futures::future::BoxFuture;

use super::Batcher;
use crate::node::batch::replication_id;
use crate::node::script;
use crate::protocol::alone::{self, Alone, Answer};
use crate::protocol::op::{self, Op, Reply};

impl Batcher {
    /// One call of the lock script carrying `ops`, sent `seq`-th on the
    /// connection (on its first poll).
    pub(super) async fn call(self: Arc<Self>, seq: u64, ops: Vec<Op>) -> Vec<Reply> {
        if !ops.iter().any(Op::must_run) {
            return self.run(seq, &ops, false).await;
        }
        let (count, timeout) = (ops.len(), self.timeout);
        let batcher = Arc::clone(&self);
        let mut call = Box::pin(async move { batcher.run(seq, &ops, true).await });
        match tokio::time::timeout(timeout, call.as_mut()).await {
            Ok(replies) => replies,
            Err(_elapsed) => {
                self.lock().owed += 1;
                let batcher = Arc::clone(&self);
                self.runtime.spawn(async move {
                    call.await;
                    batcher.owed_call_ended();
                });
                self.link.stopped_answering();
                let late = FredError::new(
                    ErrorKind::Timeout,
                    "no reply within the node timeout (the call still runs)",
                );
                vec![Err(late); count]
            }
        }
    }

    /// Sends `ops` in their form alone on the connection (one operation
    /// that has one, on a single server: `protocol/alone.rs`) or as one
    /// EVALSHA of the lock script, and reads each one's answer; `patient`:
    /// without fred's timeout (see the module's doc).
    async fn run(&self, seq: u64, ops: &[Op], patient: bool) -> Vec<Reply> {
        let alone = match ops {
            [op] if !self.script.is_cluster_form() => alone::form(op),
            _ => None,
        };
        let answer = match alone {
            Some(Alone::Set(set)) if !self.script_only.load(Ordering::Relaxed) => {
                let set_command = CustomCommand::new_static("SET", ClusterHash::FirstKey, false);
                crate::metrics::node_call("set");
                let answer = (self.client.with_options(&Self::options(patient)))
                    .custom::<Value, Value>(set_command, set)
                    .await;
                alone::set_answer(&ops[0], answer)
            }
            Some(Alone::Release(keys, args)) => {
                let Some(release) = &self.script.plain_release else {
                    return self.run_script(seq, ops, patient).await;
                };
                let sha = Value::from(release.sha1().to_string());
                match self.command("EVALSHA", sha, keys, args, patient).await {
                    Ok(answer) => alone::release_answer(answer),
                    // Not cached: it goes again as EVAL, as any operation
                    // that creates no hold may (which caches it).
                    Err(error) if script::is_noscript(&error) => {
                        return self
                            .again(seq, ops, Err(error), Again::ReleaseBody, patient)
                            .await;
                    }
                    Err(error) => Answer::Answered(Err(error)),
                }
            }
            _ => return self.run_script(seq, ops, patient).await,
        };
        match answer {
            Answer::Answered(reply) => {
                if matches!(&reply, Err(error) if error.kind() == &ErrorKind::Timeout) {
                    self.link.stopped_answering();
                }
                vec![reply]
            }
            Answer::NeedsScript {
                otherwise,
                unsupported,
            } => {
                if unsupported {
                    self.script_only.store(true, Ordering::Relaxed);
                }
                self.again(seq, ops, otherwise, Again::BySha, patient).await
            }
        }
    }

    /// Sends `ops` as one EVALSHA of the lock script (see [`Batcher::run`]).
    async fn run_script(&self, seq: u64, ops: &[Op], patient: bool) -> Vec<Reply> {
        let (keys, args) = self.script.encode(ops);
        let sha = Value::from(self.script.script.sha1().to_string());
        match self.command("EVALSHA", sha, keys, args, patient).await {
            Ok(answer) => self.decode(answer, ops.len()),
            Err(error) if script::is_noscript(&error) => {
                self.again(seq, ops, Err(error), Again::WithBody, patient)
                    .await
            }
            Err(error) => {
                if error.kind() == &ErrorKind::Timeout {
                    self.link.stopped_answering();
                }
                vec![Err(error); ops.len()]
            }
        }
    }

    /// `command` (EVALSHA or EVAL) of `script` with `keys` and `args`; on
    /// the connection when first polled.
    async fn command(
        &self,
        command: &'static str,
        script: Value,
        keys: Vec<Key>,
        args: Vec<Value>,
        patient: bool,
    ) -> Result<Value, FredError> {
        let options = Self::options(patient);
        crate::metrics::node_call(if command == "EVAL" { "eval" } else { "evalsha" });
        let mut all = Vec::with_capacity(2 + keys.len() + args.len());
        all.push(script);
        all.push(Value::from(keys.len() as i64));
        all.extend(keys.into_iter().map(Value::from));
        all.extend(args);
        let command = CustomCommand::new_static(command, ClusterHash::FirstKey, false);
        self.client
            .with_options(&options)
            .custom::<Value, Value>(command, all)
            .await
    }

    /// The lock script's answers to `count` operations; on a cluster
    /// shard, the replication id the script appended is told to the server
    /// first (`replication_id.rs`).
    fn decode(&self, answer: Value, count: usize) -> Vec<Reply> {
        let Some(tell) = &self.tell_replication_id else {
            return op::decode(answer, count);
        };
        let (answers, id) = replication_id::split(answer);
        tell.tell(id.as_deref());
        op::decode(answers, count)
    }

    /// A command's options: `patient`, without fred's timeout.
    fn options(patient: bool) -> Options {
        Options {
            // Zero: no timeout, so fred never drops the command unwritten.
            timeout: patient.then_some(Duration::ZERO),
            ..Options::default()
        }
    }

    /// The call did nothing on the node: it found no script there
    /// (`WithBody`, `ReleaseBody`), or its native command left the decision
    /// to the script (`BySha`). If nothing was sent on the connection after
    /// it, all of it goes again as the script, still ahead of anything
    /// later (an unwind). Otherwise operations that can create a hold
    /// answer `otherwise` and are never sent again, nor are releases of a
    /// token that a later call took a hold for (`holds_sent.rs`); the
    /// others go again. A resend that did nothing either goes again by the same rule,
    /// numbered as the resend: the plain release meeting a lock record goes
    /// as the lock script by its digest, and that digest answering NOSCRIPT
    /// (flushed meanwhile) goes with the body, which always runs. So what
    /// must run (a release) is never lost to a flush. EVAL also caches the
    /// script; after a NOSCRIPT with nothing to send again, the script is
    /// loaded for the next calls.
    async fn again(
        &self,
        seq: u64,
        ops: &[Op],
        otherwise: Reply,
        how: Again,
        patient: bool,
    ) -> Vec<Reply> {
        // The answer may have come within the call's first poll, which
        // `Batcher::start` makes under the queue's lock: out of it first.
        tokio::task::yield_now().await;
        let mut replies = vec![otherwise; ops.len()];
        let (mut seq, mut how) = (seq, how);
        let mut pending: Vec<usize> = (0..ops.len()).collect();
        // At most ReleaseBody, then BySha, then WithBody, which ends it.
        loop {
            let Some(resent) = self.send_again(seq, ops, &pending, how, patient) else {
                if matches!(how, Again::WithBody) {
                    if let Err(error) = self.script.script.load(&self.client).await {
                        tracing::debug!(%error, "script load after NOSCRIPT failed");
                    }
                }
                return replies;
            };
            let Resent {
                again,
                seq: resent_seq,
                call,
                first,
            } = resent;
            seq = resent_seq;
            let answer = match first {
                Poll::Ready(answer) => answer,
                Poll::Pending => call.await,
            };
            let answers = match (answer, how) {
                (Ok(answer), Again::ReleaseBody) => match alone::release_answer(answer) {
                    Answer::Answered(reply) => vec![reply],
                    // A lock record there (seldom after a flush): the lock
                    // script's release, by its digest.
                    Answer::NeedsScript { otherwise, .. } => {
                        again.iter().for_each(|&i| replies[i] = otherwise.clone());
                        (pending, how) = (again, Again::BySha);
                        continue;
                    }
                },
                // Flushed since: with the body, if it still may go.
                (Err(error), Again::BySha) if script::is_noscript(&error) => {
                    (pending, how) = (again, Again::WithBody);
                    continue;
                }
                (Ok(answer), _) => self.decode(answer, again.len()),
                (Err(error), _) => vec![Err(error); again.len()],
            };
            // Each answer goes back to its own operation's slot.
            for (index, reply) in again.into_iter().zip(answers) {
                replies[index] = reply;
            }
            return replies;
        }
    }

    /// Puts the `pending` operations of `ops` that may go again (all of
    /// them when nothing was sent after call `seq`, else those that create
    /// no hold and release none a later call took) on the connection as
    /// one call `how`, numbered and polled once under the queue's lock;
    /// `None` when none may.
    fn send_again(
        &self,
        seq: u64,
        ops: &[Op],
        pending: &[usize],
        how: Again,
        patient: bool,
    ) -> Option<Resent<'_>> {
        let mut state = self.lock();
        let last = state.sent == seq;
        // Overtaken: no acquire goes again (it could land after its
        // unwind), nor a release of a token a later call took a hold for
        // (a waiting writer's next attempt: it would remove that hold).
        let may_go_after = |op: &Op| {
            !op.creates_hold()
                && !(op.released_token()).is_some_and(|token| state.holds_sent.after(seq, token))
        };
        let again: Vec<usize> = (pending.iter().copied())
            .filter(|&i| last || may_go_after(&ops[i]))
            .collect();
        if again.is_empty() {
            return None;
        }
        state.number(again.iter().map(|&i| &ops[i]));
        let (mut keys, mut args) = self.script.encode(again.iter().map(|&i| &ops[i]));
        let (command, script) = match how {
            Again::WithBody => ("EVAL", script::body(&self.script.script)),
            Again::BySha => ("EVALSHA", self.script.script.sha1().to_string()),
            Again::ReleaseBody => {
                match (
                    self.script.plain_release.as_ref(),
                    alone::form(&ops[again[0]]),
                ) {
                    (Some(release), Some(Alone::Release(release_keys, release_args))) => {
                        (keys, args) = (release_keys, release_args);
                        ("EVAL", script::body(release))
                    }
                    _ => ("EVAL", script::body(&self.script.script)),
                }
            }
        };
        let mut call: BoxFuture<'_, Result<Value, FredError>> =
            Box::pin(self.command(command, script.into(), keys, args, patient));
        // Polled under the lock: on the connection before anything later.
        let first = call.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        Some(Resent {
            again,
            seq: state.sent,
            call,
            first,
        })
    }
}

/// A call sent again ([`Batcher::send_again`]).
struct Resent<'a> {
    /// Which operations of the first call it carries.
    again: Vec<usize>,
    /// Its number on the connection.
    seq: u64,
    call: BoxFuture<'a, Result<Value, FredError>>,
    /// Its first poll, made under the queue's lock.
    first: Poll<Result<Value, FredError>>,
}

/// How a call that did nothing goes again ([`Batcher::again`]).
#[derive(Debug, Clone, Copy)]
enum Again {
    /// As EVAL with the script's body (the node has no script cached).
    WithBody,
    /// As the script by its digest (a form alone left the decision to it).
    BySha,
    /// The plain release alone, as EVAL of its own script's body.
    ReleaseBody,
}
