//! The batcher's queue (node/batch/batcher.rs), as pure state: the calls in flight,
//! the operations waiting for the next call, and which of them are still
//! wanted.

use std::collections::VecDeque;

use tokio::sync::oneshot;

use super::holds_sent::HoldsSent;
use crate::protocol::op::{Op, Reply};

/// Calls of ours a node may have in flight before operations queue. Two,
/// not one, so a release and the acquire of the waiter it wakes go out
/// back to back (the local hand-off, see wait/notify.rs) instead of one round
/// trip apart.
pub(crate) const MAX_IN_FLIGHT: usize = 2;

/// Most operations in one call, so one call's answer stays small.
pub(crate) const MAX_BATCH: usize = 256;

/// An operation waiting for the next call.
#[derive(Debug)]
pub(crate) struct Queued {
    pub(crate) op: Op,
    pub(crate) reply: oneshot::Sender<Reply>,
}

impl Queued {
    /// Whether it must still be sent (see [`Op::must_run`]).
    fn wanted(&self) -> bool {
        self.op.must_run() || !self.reply.is_closed()
    }
}

/// A node's calls in flight and operations waiting, guarded by the batcher's lock.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub(crate) in_flight: usize,
    pub(crate) queue: VecDeque<Queued>,
    /// Open hand-off windows (`Batcher::hold`): everything queues meanwhile.
    pub(crate) held: usize,
    /// Calls put on the connection so far: each call's sequence number
    /// (given by [`State::number`]).
    pub(crate) sent: u64,
    /// The tokens the recent calls made holds for.
    pub(crate) holds_sent: HoldsSent,
    /// Calls that outlived their caller's timeout and still run in the
    /// background (a release's resend after NOSCRIPT): owed, like calls in
    /// flight, to whoever waits for the node to drain.
    pub(crate) owed: usize,
}

impl State {
    /// The number of a call of `ops` put on the connection now; the holds
    /// it makes are remembered.
    pub(crate) fn number<'a>(&mut self, ops: impl IntoIterator<Item = &'a Op>) -> u64 {
        self.sent += 1;
        let tokens = ops.into_iter().filter_map(Op::hold_token).cloned();
        self.holds_sent.record(self.sent, tokens.collect());
        self.sent
    }

    /// Whether an operation may take a slot now: one is free, nothing waits
    /// (it would go first), and no hand-off window is open.
    pub(crate) fn may_send(&self) -> bool {
        self.in_flight < MAX_IN_FLIGHT && self.queue.is_empty() && self.held == 0
    }

    /// Whether nothing of ours is in flight or owed on the node (with no
    /// call in flight, nothing that must run is queued: a queued operation
    /// goes out when a call ends).
    pub(crate) fn is_drained(&self) -> bool {
        self.in_flight == 0 && self.owed == 0
    }

    /// Up to [`MAX_BATCH`] of the operations still wanted, oldest first.
    pub(crate) fn take_batch(&mut self) -> Option<Vec<Queued>> {
        self.queue.retain(Queued::wanted);
        if self.queue.is_empty() {
            return None;
        }
        let take = self.queue.len().min(MAX_BATCH);
        Some(self.queue.drain(..take).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::op::Code;

    /// Queues `code` in `state`; the receiver stands for its waiting caller.
    fn queue(state: &mut State, code: Code) -> oneshot::Receiver<Reply> {
        let (reply, answer) = oneshot::channel();
        state.queue.push_back(Queued {
            op: Op::for_test(code),
            reply,
        });
        answer
    }

    fn codes(batch: Option<Vec<Queued>>) -> Option<Vec<Code>> {
        batch.map(|batch| batch.into_iter().map(|q| q.op.code).collect())
    }

    #[test]
    fn a_batch_takes_the_queue_in_order() {
        let mut state = State::default();
        let _waiting = [
            queue(&mut state, Code::Acquire),
            queue(&mut state, Code::Release),
        ];
        assert_eq!(
            codes(state.take_batch()),
            Some(vec![Code::Acquire, Code::Release])
        );
        assert_eq!(codes(state.take_batch()), None);
    }

    #[test]
    fn abandoned_operations_are_dropped_but_releases_and_extends_always_go() {
        let mut state = State::default();
        let abandoned = [Code::Acquire, Code::Extend, Code::Commit, Code::Release]
            .map(|code| queue(&mut state, code));
        drop(abandoned);
        let _kept = queue(&mut state, Code::Acquire);
        assert_eq!(
            codes(state.take_batch()),
            Some(vec![Code::Extend, Code::Release, Code::Acquire])
        );
    }

    #[test]
    fn a_batch_holds_at_most_max_batch_operations() {
        let mut state = State::default();
        let _waiting: Vec<_> = (0..MAX_BATCH + 3)
            .map(|_| queue(&mut state, Code::Release))
            .collect();
        assert_eq!(state.take_batch().map(|b| b.len()), Some(MAX_BATCH));
        assert_eq!(state.take_batch().map(|b| b.len()), Some(3));
    }

    #[test]
    fn an_operation_may_be_sent_only_when_a_slot_is_free_and_nothing_waits() {
        let mut state = State::default();
        assert!(state.may_send());
        state.in_flight = MAX_IN_FLIGHT;
        assert!(!state.may_send());
        state.in_flight = 0;
        state.held = 1;
        assert!(!state.may_send());
        state.held = 0;
        let _waiting = queue(&mut state, Code::Release);
        assert!(
            !state.may_send(),
            "a free slot must not let an operation pass the queue"
        );
    }
}
