//! One call of the lock script on a node's connection (node/batch/batcher.rs): sent,
//! answered, and sent again after a NOSCRIPT answer.
//!
//! A call carrying an operation that must run (a release, an unwind, an
//! extend: [`Op::must_run`]) is followed to its end even after its caller
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
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use fred::error::{Error as FredError, ErrorKind};
use fred::interfaces::ClientLike;
use fred::types::config::Options;
use fred::types::{ClusterHash, CustomCommand, Key, Value};

use super::Batcher;
use crate::node::script;
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

    /// Sends `ops` as one EVALSHA and reads each one's answer; `patient`:
    /// without fred's timeout (see the module's doc).
    async fn run(&self, seq: u64, ops: &[Op], patient: bool) -> Vec<Reply> {
        let (keys, args) = self.script.encode(ops);
        let sha = Value::from(self.script.script.sha1().to_string());
        match self.command("EVALSHA", sha, keys, args, patient).await {
            Ok(answer) => op::decode(answer, ops.len()),
            Err(error) if script::is_noscript(&error) => {
                self.after_noscript(seq, ops, error, patient).await
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
        let options = Options {
            // Zero: no timeout, so fred never drops the command unwritten.
            timeout: patient.then_some(Duration::ZERO),
            ..Options::default()
        };
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

    /// The call found no script on the node. If nothing was sent on the
    /// connection after it, all of it goes again as EVAL, still ahead of
    /// anything later (an unwind). Otherwise operations that can create a
    /// hold fail with the NOSCRIPT error and are never sent again, and the
    /// others go again. EVAL also caches the script; with nothing to send
    /// again, the script is loaded for the next calls.
    async fn after_noscript(
        &self,
        seq: u64,
        ops: &[Op],
        noscript: FredError,
        patient: bool,
    ) -> Vec<Reply> {
        let mut replies = vec![Err(noscript); ops.len()];
        let again = {
            let mut state = self.lock();
            let last = state.sent == seq;
            let again: Vec<usize> = (0..ops.len())
                .filter(|&i| last || !ops[i].creates_hold())
                .collect();
            if !again.is_empty() {
                state.sent += 1;
                let (keys, args) = self.script.encode(again.iter().map(|&i| &ops[i]));
                let body = Value::from(script::body(&self.script.script));
                let mut eval = Box::pin(self.command("EVAL", body, keys, args, patient));
                // Polled under the lock: on the connection before anything later.
                let first = eval.as_mut().poll(&mut Context::from_waker(Waker::noop()));
                Some((again, eval, first))
            } else {
                None
            }
        };
        let Some((again, eval, first)) = again else {
            if let Err(error) = self.script.script.load(&self.client).await {
                tracing::debug!(%error, "script load after NOSCRIPT failed");
            }
            return replies;
        };
        let answer = match first {
            Poll::Ready(answer) => answer,
            Poll::Pending => eval.await,
        };
        let answers = match answer {
            Ok(answer) => op::decode(answer, again.len()),
            Err(error) => vec![Err(error); again.len()],
        };
        // Each answer goes back to its own operation's slot.
        for (index, reply) in again.into_iter().zip(answers) {
            replies[index] = reply;
        }
        replies
    }
}
