//! Group commit: the one way operations reach a node.
//!
//! fred costs about one system call and two task wake-ups per command, so
//! under load the client's CPU, not the network, bounds how many locks a
//! process can take. While a node already has [`MAX_IN_FLIGHT`] calls of
//! ours in flight, a new operation for it (any kind, any action) waits
//! here; when a call returns, everything waiting goes out together as ONE
//! call of `protocol/scripts/ops/`, which runs the operations in order and
//! answers each one separately. An idle node gets the operation at once,
//! so there is no added latency when there is no load; a call of one
//! operation that has a native form (`protocol/native.rs`: the default
//! lock's acquire) goes as that command instead of the script, on single
//! servers.
//!
//! Each operation keeps its own result, timeout and unwind:
//! - its answer is its own: one that fails (OOM, a key of another type)
//!   fails alone, the script runs the others;
//! - its caller waits at most the node timeout, queueing included;
//! - one nobody waits for any more is dropped unsent, unless it must run
//!   (a release, an extend or a move: see [`Op::must_run`]); a call carrying one
//!   is written and followed to its answer (and its NOSCRIPT resend) after
//!   its caller stopped waiting (`batcher_call.rs`).
//!
//! Order is kept: a node's operations go out in the order they entered, on
//! the node's one connection (every call is put on the wire under the
//! batcher's lock), so an unwind queued after an acquire always runs after
//! it. A NOSCRIPT answer keeps that promise: the call goes again as EVAL
//! (which also re-caches the script) only if nothing was sent on the
//! connection after it; otherwise its acquires fail and are never sent
//! again (a late copy could land after their unwind), nor its releases of
//! a token a later call took a hold for (a waiting writer's next attempt:
//! `holds_sent.rs`), and only its other operations go again.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use fred::clients::Client;
use fred::error::{Error as FredError, ErrorKind};
use futures::future::BoxFuture;
use tokio::runtime::Handle;
use tokio::sync::{Notify, oneshot};

use crate::node::batch::queue::{MAX_IN_FLIGHT, Queued, State};
use crate::node::batch::replication_id::TellReplicationId;
use crate::node::link::Link;
use crate::node::script::LockScript;
use crate::protocol::op::{Op, Reply};

/// One node's operations: sent at once, or queued for the next call.
#[derive(Debug)]
pub(crate) struct Batcher {
    client: Client,
    /// How long one operation may take, queueing included.
    timeout: Duration,
    /// Where calls finish when their caller has gone: the `Redlock`'s runtime.
    runtime: Handle,
    /// Told when a call goes unanswered for the whole timeout (down until it answers).
    link: Arc<Link>,
    state: Mutex<State>,
    /// The lock script the calls run (node/script.rs).
    script: &'static LockScript,
    /// Told when the last call in flight ends (see [`Batcher::drained`]).
    idle: Notify,
    /// The server refused a native command's syntax (older than Redis
    /// 7.0): every operation goes as the script (`protocol/native.rs`).
    script_only: AtomicBool,
    /// On a cluster shard: told the replication id each answer carries
    /// (`replication_id.rs`).
    tell_replication_id: Option<TellReplicationId>,
}

/// One call of the lock script, owning its operations, answering each.
type Call = BoxFuture<'static, Vec<Reply>>;

impl Batcher {
    pub(crate) fn new(
        client: Client,
        timeout: Duration,
        link: Arc<Link>,
        script: &'static LockScript,
    ) -> Self {
        Self {
            script,
            client,
            timeout,
            runtime: Handle::current(),
            link,
            state: Mutex::default(),
            idle: Notify::new(),
            script_only: AtomicBool::new(false),
            tell_replication_id: None,
        }
    }

    /// Tells `tell` the replication id each answer of the lock script's
    /// cluster form carries, before the answer is given (a cluster shard).
    pub(crate) fn telling_replication_ids(mut self, tell: TellReplicationId) -> Self {
        self.tell_replication_id = Some(tell);
        self
    }

    /// Puts `op` on the connection (a slot is free) or in the queue, now,
    /// before anything is awaited: a fan-out enters its operation on every
    /// node before it waits for the first answer, so one it stops waiting
    /// for (the decision came first) is never left unsent for want of a
    /// poll. Dropping the result leaves a sent call to finish in the
    /// background; a queued operation is then sent only if it must run
    /// ([`Op::must_run`]).
    pub(crate) fn enter(self: &Arc<Self>, op: Op) -> Entered {
        let mut state = self.lock();
        if !state.may_send() {
            let (reply, answer) = oneshot::channel();
            state.queue.push_back(Queued { op, reply });
            return Entered::Queued {
                answer,
                timeout: self.timeout,
            };
        }
        state.in_flight += 1;
        let (call, first) = self.start(&mut state, vec![op]);
        drop(state);
        match first {
            Poll::Ready(replies) => {
                self.call_ended();
                Entered::Answered(first_reply(replies))
            }
            Poll::Pending => Entered::Sent(InFlight {
                batcher: Arc::clone(self),
                call: Some(call),
            }),
        }
    }

    /// Returns once no call of ours is in flight on the node or owed to it
    /// (one that outlived its caller's timeout): what callers stopped
    /// waiting for (a release's stragglers, an extend, an unwind's resend
    /// after NOSCRIPT) has been answered, or has failed. With no call in
    /// flight, nothing that must run is queued (a queued operation goes out
    /// when a call ends).
    pub(crate) async fn drained(&self) {
        loop {
            let notified = self.idle.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the check, so an end in between is not missed.
            notified.as_mut().enable();
            if self.lock().is_drained() {
                return;
            }
            notified.await;
        }
    }

    /// Opens a hand-off window: until [`Batcher::unhold`], every operation
    /// queues, so a release and the acquire of the local waiter it wakes
    /// leave together as one call.
    pub(crate) fn hold(&self) {
        self.lock().held += 1;
    }

    /// Closes a hand-off window and sends what queued during it, on a slot
    /// taken for it, unless no slot is free (then it goes with the next call
    /// that ends) or another window is still open.
    pub(crate) fn unhold(self: &Arc<Self>) {
        let sent = {
            let mut state = self.lock();
            state.held -= 1;
            if state.held > 0 || state.in_flight >= MAX_IN_FLIGHT {
                return;
            }
            let Some(batch) = state.take_batch() else {
                return;
            };
            state.in_flight += 1;
            self.send(&mut state, batch)
        };
        self.finish(sent);
    }

    /// A call on one of our slots has ended: the next batch goes out on it,
    /// or the slot is freed when nothing (still wanted) waits.
    fn call_ended(self: &Arc<Self>) {
        let sent = {
            let mut state = self.lock();
            match state.take_batch() {
                Some(batch) => self.send(&mut state, batch),
                None => {
                    state.in_flight -= 1;
                    if state.is_drained() {
                        self.idle.notify_waiters();
                    }
                    return;
                }
            }
        };
        self.finish(sent);
    }

    /// A call that outlived its caller's timeout has ended (batcher_call.rs).
    fn owed_call_ended(&self) {
        let mut state = self.lock();
        state.owed -= 1;
        if state.is_drained() {
            self.idle.notify_waiters();
        }
    }

    /// Puts `batch` on the connection as one call (see [`Batcher::start`]).
    /// Delivering happens in [`Batcher::finish`], once the lock is released.
    fn send(self: &Arc<Self>, state: &mut State, batch: Vec<Queued>) -> Sent {
        let (ops, replies): (Vec<Op>, Vec<_>) = batch.into_iter().map(|q| (q.op, q.reply)).unzip();
        let (call, first) = self.start(state, ops);
        Sent {
            call,
            first,
            replies,
        }
    }

    /// Starts one call carrying `ops`, under the state's lock: the call is
    /// polled once here, so its command is on the connection before this
    /// returns, numbered in the order of the connection, and nothing that
    /// enters later (say, the unwind of an acquire in it) can overtake it.
    fn start(self: &Arc<Self>, state: &mut State, ops: Vec<Op>) -> (Call, Poll<Vec<Reply>>) {
        let (batcher, seq) = (Arc::clone(self), state.number(&ops));
        let mut call: Call = Box::pin(batcher.call(seq, ops));
        let first = call.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        (call, first)
    }

    /// Hands a sent batch's answers over when it completes (in the
    /// background), then lets the slot carry the next batch.
    fn finish(self: &Arc<Self>, sent: Sent) {
        let Sent {
            call,
            first,
            replies,
        } = sent;
        match first {
            // Failed at once (say, the connection task is gone): deliver here.
            Poll::Ready(answers) => {
                deliver(replies, answers);
                self.call_ended();
            }
            Poll::Pending => {
                let batcher = Arc::clone(self);
                self.runtime.spawn(async move {
                    deliver(replies, call.await);
                    batcher.call_ended();
                });
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }
}

/// Hands each operation of a batch its own answer.
fn deliver(replies: Vec<oneshot::Sender<Reply>>, answers: Vec<Reply>) {
    for (reply, answer) in replies.into_iter().zip(answers) {
        let _ = reply.send(answer);
    }
}

/// A batch whose call has been polled once (its command is on the connection).
struct Sent {
    call: Call,
    first: Poll<Vec<Reply>>,
    replies: Vec<oneshot::Sender<Reply>>,
}

/// An operation entered into its node's batcher ([`Batcher::enter`]).
pub(crate) enum Entered {
    /// Its call failed at once.
    Answered(Reply),
    /// On the connection, in a call of its own.
    Sent(InFlight),
    /// In the queue, for the next call; waited for at most `timeout`.
    Queued {
        answer: oneshot::Receiver<Reply>,
        timeout: Duration,
    },
}

impl Entered {
    /// The operation's answer.
    pub(crate) async fn answer(self) -> Reply {
        match self {
            Entered::Answered(reply) => reply,
            Entered::Sent(mut in_flight) => {
                let replies = in_flight.call.as_mut().expect("set when sent").await;
                in_flight.call = None;
                first_reply(replies)
            }
            Entered::Queued { answer, timeout } => {
                match tokio::time::timeout(timeout, answer).await {
                    Ok(Ok(reply)) => reply,
                    Ok(Err(_dropped)) => Err(FredError::new(
                        ErrorKind::Canceled,
                        "the batch was dropped (runtime shut down)",
                    )),
                    Err(_elapsed) => Err(FredError::new(
                        ErrorKind::Timeout,
                        "no reply within the node timeout (queued behind calls in flight)",
                    )),
                }
            }
        }
    }
}

/// The answer of a call that carried one operation.
fn first_reply(replies: Vec<Reply>) -> Reply {
    replies.into_iter().next().unwrap_or_else(|| {
        Err(FredError::new(
            ErrorKind::Protocol,
            "no answer for the operation",
        ))
    })
}

/// A direct call holding one of its node's in-flight slots. The slot is
/// held until the node answers, even when the caller stops waiting first
/// (the command is on the wire by then): the rest of the call then runs in
/// the background. Then the slot carries the next batch, or is freed.
pub(crate) struct InFlight {
    batcher: Arc<Batcher>,
    /// `None` once the call has completed.
    call: Option<Call>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        match self.call.take() {
            Some(call) => {
                let batcher = Arc::clone(&self.batcher);
                self.batcher.runtime.spawn(async move {
                    let _ = call.await;
                    batcher.call_ended();
                });
            }
            None => self.batcher.call_ended(),
        }
    }
}

#[cfg(test)]
#[path = "batcher_again_tests.rs"]
mod again_tests;
#[path = "batcher_call.rs"]
mod call;
#[cfg(test)]
#[path = "batcher_tests.rs"]
mod tests;
