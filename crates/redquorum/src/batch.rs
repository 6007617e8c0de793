//! Group commit for the plain lock's operations on one node.
//!
//! fred costs about one system call and two task wake-ups per command, so
//! under load the client's CPU, not the network, bounds how many locks a
//! process can take. While a node already has [`MAX_IN_FLIGHT`] calls of
//! ours in flight, a new acquire, extend or release for it waits here; when
//! a call returns, everything waiting goes out together as ONE call of
//! `scripts/lock_ops.lua`, which runs the operations in order and answers
//! each one separately. An idle node gets the operation at once, so there
//! is no added latency when there is no load.
//!
//! Each operation keeps its own result, timeout and unwind:
//! - its reply is its own integer; a key of the wrong type fails only its own
//!   operation (the script answers -1 for it and runs the others);
//! - its caller waits at most the node timeout, queueing included;
//! - an acquire or extend whose caller stopped waiting (timed out, or decided
//!   on a quorum without this node) is dropped unsent: nothing was written,
//!   so nothing needs undoing. A release is always sent.
//!
//! Order is kept: one node's operations go out in the order they entered,
//! on the node's one connection, so an unwind queued after an acquire always
//! runs after it.

use std::collections::VecDeque;
use std::sync::Mutex;

use fred::error::Error as FredError;
use fred::types::Value;
use tokio::sync::oneshot;

use crate::mutants::{self, Mutant};
use crate::token::OwnerToken;

/// Calls of ours a node may have in flight before operations queue. Two,
/// not one, so a release and the acquire of the waiter it wakes go out
/// back to back (the local hand-off, see notify.rs) instead of one round
/// trip apart.
pub(crate) const MAX_IN_FLIGHT: usize = 2;

/// Most operations in one call, so one call's reply stays small.
pub(crate) const MAX_BATCH: usize = 256;

/// One of the plain lock's operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockOp {
    Acquire,
    /// Acquire, and propose a fencing token on the fence key (fence.rs).
    AcquireFenced,
    Extend,
    Release,
}

impl LockOp {
    /// The operation's three arguments to `lock_ops.lua`: kind, owner, ttl.
    pub(crate) fn args(self, owner: OwnerToken, ttl_ms: i64) -> [Value; 3] {
        let kind = match self {
            LockOp::Acquire => "a",
            LockOp::AcquireFenced => "f",
            LockOp::Extend if mutants::is_active(Mutant::RevivingExtend) => "V",
            LockOp::Extend if mutants::is_active(Mutant::NoOwnerCheck) => "E",
            LockOp::Extend => "e",
            LockOp::Release if mutants::is_active(Mutant::NoOwnerCheck) => "R",
            LockOp::Release => "r",
        };
        [
            Value::from_static_str(kind),
            Value::from(owner.as_value()),
            Value::from(ttl_ms),
        ]
    }
}

/// What an operation's caller receives: the script's integer for it.
pub(crate) type Reply = Result<i64, FredError>;

/// An operation waiting for the next call to its node.
#[derive(Debug)]
pub(crate) struct Queued {
    pub(crate) op: LockOp,
    pub(crate) key: String,
    /// The fence key, for [`LockOp::AcquireFenced`] only.
    pub(crate) fence_key: Option<String>,
    pub(crate) owner: OwnerToken,
    pub(crate) ttl_ms: i64,
    pub(crate) reply: oneshot::Sender<Reply>,
}

impl Queued {
    /// Whether it must still be sent. An acquire or extend nobody waits for
    /// any more is dropped: it was never sent, so there is nothing to undo
    /// (and a late acquire would only need unwinding). A release always goes.
    fn wanted(&self) -> bool {
        self.op == LockOp::Release || !self.reply.is_closed()
    }
}

/// Whether an operation may be sent now or must wait for a batch.
#[derive(Debug)]
pub(crate) enum Turn {
    /// Send it now; the caller holds one in-flight slot and must give it
    /// back through [`Batcher::next_batch`] when the call ends.
    Send,
    /// Queued: the reply arrives here once its batch has run.
    Wait(oneshot::Receiver<Reply>),
}

/// One node's queue of operations waiting for a batch.
#[derive(Debug, Default)]
pub(crate) struct Batcher {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    in_flight: usize,
    queue: VecDeque<Queued>,
    /// Open hand-off windows ([`Batcher::hold`]): everything queues meanwhile.
    held: usize,
}

impl Batcher {
    /// Takes an in-flight slot if one is free (and nothing is queued, which
    /// would go first), or queues the operation that `queued` builds.
    pub(crate) fn enter(&self, queued: impl FnOnce(oneshot::Sender<Reply>) -> Queued) -> Turn {
        let mut state = self.lock();
        if state.in_flight < MAX_IN_FLIGHT && state.queue.is_empty() && state.held == 0 {
            state.in_flight += 1;
            return Turn::Send;
        }
        let (tx, rx) = oneshot::channel();
        state.queue.push_back(queued(tx));
        Turn::Wait(rx)
    }

    /// A call has ended: passes the next batch to `send` on its slot and
    /// returns what `send` returned, or frees the slot when nothing (still
    /// wanted) is waiting.
    ///
    /// `send` runs under the batcher's lock and must put the batch's command
    /// on the connection before it returns: an operation that enters after
    /// these (say, the unwind of an acquire in the batch) must not be sent
    /// ahead of them. It must not call back into the batcher.
    pub(crate) fn next_batch<R>(&self, send: impl FnOnce(Vec<Queued>) -> R) -> Option<R> {
        let mut state = self.lock();
        let batch = state.take_batch();
        if batch.is_none() {
            state.in_flight -= 1;
        }
        batch.map(send)
    }

    /// Opens a hand-off window: until [`Batcher::unhold`], every operation
    /// queues, so a release and the acquire of the local waiter it wakes
    /// leave together as one call.
    pub(crate) fn hold(&self) {
        self.lock().held += 1;
    }

    /// Closes a hand-off window: passes what queued during it to `send`
    /// (as in [`Batcher::next_batch`]) on a slot taken for it, unless no
    /// slot is free (then it goes with the next call that ends) or another
    /// window is still open.
    pub(crate) fn unhold<R>(&self, send: impl FnOnce(Vec<Queued>) -> R) -> Option<R> {
        let mut state = self.lock();
        state.held -= 1;
        if state.held > 0 || state.in_flight >= MAX_IN_FLIGHT {
            return None;
        }
        let batch = state.take_batch()?;
        state.in_flight += 1;
        Some(send(batch))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }
}

impl State {
    /// Up to [`MAX_BATCH`] of the operations still wanted, oldest first.
    fn take_batch(&mut self) -> Option<Vec<Queued>> {
        self.queue.retain(Queued::wanted);
        if self.queue.is_empty() {
            return None;
        }
        let take = self.queue.len().min(MAX_BATCH);
        Some(self.queue.drain(..take).collect())
    }
}

/// Hands each operation of a batch its own result: its integer, or the
/// call's error when the whole call failed.
pub(crate) fn deliver(replies: Vec<oneshot::Sender<Reply>>, result: Result<Vec<i64>, FredError>) {
    let result = result.and_then(|values| {
        if values.len() == replies.len() {
            Ok(values)
        } else {
            Err(FredError::new(
                fred::error::ErrorKind::Protocol,
                format!(
                    "lock_ops answered {} results for {} operations",
                    values.len(),
                    replies.len()
                ),
            ))
        }
    });
    match result {
        Ok(values) => {
            for (reply, value) in replies.into_iter().zip(values) {
                let _ = reply.send(Ok(value));
            }
        }
        Err(error) => {
            for reply in replies {
                let _ = reply.send(Err(error.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operation(op: LockOp, reply: oneshot::Sender<Reply>) -> Queued {
        Queued {
            op,
            key: "k".into(),
            fence_key: None,
            owner: OwnerToken::random(),
            ttl_ms: 1000,
            reply,
        }
    }

    fn queued(op: LockOp) -> (Queued, oneshot::Receiver<Reply>) {
        let (tx, rx) = oneshot::channel();
        (operation(op, tx), rx)
    }

    fn next(batcher: &Batcher) -> Option<Vec<Queued>> {
        batcher.next_batch(|batch| batch)
    }

    fn unhold(batcher: &Batcher) -> Option<Vec<Queued>> {
        batcher.unhold(|batch| batch)
    }

    fn enter(batcher: &Batcher, op: LockOp) -> Turn {
        batcher.enter(|tx| operation(op, tx))
    }

    #[test]
    fn sends_at_once_until_the_slots_are_taken_then_queues() {
        let batcher = Batcher::default();
        for _ in 0..MAX_IN_FLIGHT {
            assert!(matches!(enter(&batcher, LockOp::Acquire), Turn::Send));
        }
        let _waiting = [
            enter(&batcher, LockOp::Acquire),
            enter(&batcher, LockOp::Release),
        ];
        assert!(matches!(_waiting[0], Turn::Wait(_)));
        assert!(matches!(_waiting[1], Turn::Wait(_)));
        // The ending call's slot carries both queued operations, in order.
        let batch = next(&batcher).expect("a batch");
        let ops: Vec<LockOp> = batch.iter().map(|q| q.op).collect();
        assert_eq!(ops, [LockOp::Acquire, LockOp::Release]);
        // Nothing left: the batch's slot and the other call's slot free up.
        assert!(next(&batcher).is_none());
        assert!(next(&batcher).is_none());
        assert!(matches!(enter(&batcher, LockOp::Extend), Turn::Send));
    }

    #[test]
    fn a_free_slot_does_not_let_an_operation_pass_the_queue() {
        let batcher = Batcher::default();
        for _ in 0..MAX_IN_FLIGHT {
            enter(&batcher, LockOp::Acquire);
        }
        let _queued = enter(&batcher, LockOp::Acquire);
        let batch = next(&batcher).expect("the queued acquire");
        assert_eq!(batch.len(), 1);
        // One slot is free again only once a call returns with nothing queued.
        assert!(next(&batcher).is_none());
        assert!(matches!(enter(&batcher, LockOp::Release), Turn::Send));
    }

    #[test]
    fn abandoned_acquires_are_dropped_but_releases_always_go() {
        let batcher = Batcher::default();
        for _ in 0..MAX_IN_FLIGHT {
            enter(&batcher, LockOp::Acquire);
        }
        let abandoned =
            [LockOp::Acquire, LockOp::Extend, LockOp::Release].map(|op| enter(&batcher, op));
        drop(abandoned);
        let kept = enter(&batcher, LockOp::Acquire);
        let batch = next(&batcher).expect("a batch");
        let ops: Vec<LockOp> = batch.iter().map(|q| q.op).collect();
        assert_eq!(ops, [LockOp::Release, LockOp::Acquire]);
        drop(kept);
    }

    #[test]
    fn a_hand_off_window_queues_everything_then_sends_it_as_one_batch() {
        let batcher = Batcher::default();
        batcher.hold();
        let waiting = [
            enter(&batcher, LockOp::Release),
            enter(&batcher, LockOp::Acquire),
        ];
        assert!(waiting.iter().all(|turn| matches!(turn, Turn::Wait(_))));
        let batch = unhold(&batcher).expect("the window's operations");
        let ops: Vec<LockOp> = batch.iter().map(|q| q.op).collect();
        assert_eq!(ops, [LockOp::Release, LockOp::Acquire]);
        // The batch took a slot; it gives it back when its call ends.
        assert!(matches!(enter(&batcher, LockOp::Acquire), Turn::Send));
        assert!(matches!(enter(&batcher, LockOp::Acquire), Turn::Wait(_)));
    }

    #[test]
    fn an_empty_hand_off_window_takes_no_slot() {
        let batcher = Batcher::default();
        batcher.hold();
        assert!(unhold(&batcher).is_none());
        for _ in 0..MAX_IN_FLIGHT {
            assert!(matches!(enter(&batcher, LockOp::Acquire), Turn::Send));
        }
    }

    #[test]
    fn a_batch_holds_at_most_max_batch_operations() {
        let batcher = Batcher::default();
        for _ in 0..MAX_IN_FLIGHT {
            enter(&batcher, LockOp::Acquire);
        }
        let waiting: Vec<Turn> = (0..MAX_BATCH + 3)
            .map(|_| enter(&batcher, LockOp::Release))
            .collect();
        assert_eq!(next(&batcher).map(|b| b.len()), Some(MAX_BATCH));
        assert_eq!(next(&batcher).map(|b| b.len()), Some(3));
        drop(waiting);
    }

    #[test]
    fn each_operation_gets_its_own_result_or_the_calls_error() {
        let (a, mut ra) = queued(LockOp::Acquire);
        let (b, mut rb) = queued(LockOp::Release);
        deliver(vec![a.reply, b.reply], Ok(vec![1, -1]));
        assert_eq!(ra.try_recv().unwrap().unwrap(), 1);
        assert_eq!(rb.try_recv().unwrap().unwrap(), -1);

        let (a, mut ra) = queued(LockOp::Acquire);
        let (b, mut rb) = queued(LockOp::Release);
        deliver(vec![a.reply, b.reply], Ok(vec![1]));
        assert!(ra.try_recv().unwrap().is_err(), "a short reply fails all");
        assert!(rb.try_recv().unwrap().is_err());

        let (a, mut ra) = queued(LockOp::Extend);
        let timeout = FredError::new(fred::error::ErrorKind::Timeout, "t");
        deliver(vec![a.reply], Err(timeout));
        let err = ra.try_recv().unwrap().unwrap_err();
        assert_eq!(*err.kind(), fred::error::ErrorKind::Timeout);
    }
}
