//! A cluster master's first slot map, and the operations that wait for it.
//!
//! The first map is read at the first call, in the refresher's task
//! (cluster/map.rs), never in a caller's: a caller that stops waiting (the
//! first call returns at a quorum of other masters) cannot cut the read
//! short, which left a fresh client without the cluster's vote until the
//! next refresh.
//!
//! An operation submitted while that read is under way is parked here
//! instead of voting `Down`, and its caller waits at most the node timeout
//! (parking included), as for any node. When the read ends, the parked
//! operations are routed in the order they came, under the lock that
//! parks them: nothing submitted after one of them can overtake it, so an
//! unwind or a release always goes out after the acquire it undoes.
//! One whose caller stopped waiting is sent all the same, as if it had
//! been on the wire, whether the call was decided by other masters or its
//! wait is over (its caller counted it as timed out): the first read of a
//! loaded client can take longer than the node timeout, and the cluster's
//! hold is part of the lease all the same (an acquire that lands late
//! only holds longer; the release or unwind that undoes it was parked, or
//! is routed, after it). Only what merely reads is dropped once its wait
//! is over. Whatever nobody waits for any more is driven to its end in a
//! task of its own, so a batcher never drops it unsent. If the read fails,
//! routing fails for each of them (nothing is sent) and the cluster votes
//! `Down` at once from then on.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use fred::error::{Error as FredError, ErrorKind};
use futures::future::BoxFuture;
use tokio::sync::{Notify, oneshot, watch};
use tokio::time::Instant;

use crate::node::server::Answered;
use crate::protocol::op::Op;

/// An operation routed to its shard: its answer to come, or why it cannot go.
pub(super) type Routed = Result<BoxFuture<'static, Answered>, FredError>;

/// The first slot map's read, and the operations parked until it ends.
pub(super) struct FirstMap {
    /// `Some` while the first read is under way: the parked operations, oldest first.
    parked: Mutex<Option<VecDeque<Parked>>>,
    /// Told at the first call: the first read starts then.
    requested: Notify,
    /// Set once the first read has ended, read or failed.
    ended: watch::Sender<bool>,
}

/// An operation waiting for the first map.
struct Parked {
    op: Op,
    /// When its caller stops waiting (the node timeout after it was submitted).
    deadline: Instant,
    routed: oneshot::Sender<Routed>,
}

impl std::fmt::Debug for FirstMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parked = crate::sync::lock(&self.parked).as_ref().map(VecDeque::len);
        f.debug_struct("FirstMap").field("parked", &parked).finish()
    }
}

impl FirstMap {
    /// A first read about to start.
    pub(super) fn new() -> Self {
        Self {
            parked: Mutex::new(Some(VecDeque::new())),
            requested: Notify::new(),
            ended: watch::Sender::new(false),
        }
    }

    /// Whether the first read is still under way.
    pub(super) fn reading(&self) -> bool {
        crate::sync::lock(&self.parked).is_some()
    }

    /// Asks for the first read (again and again: only the first ask counts).
    pub(super) fn request(&self) {
        self.requested.notify_one();
    }

    /// Resolves once the first read has been asked for.
    pub(super) async fn requested(&self) {
        self.requested.notified().await;
    }

    /// Resolves once the first read has ended.
    pub(super) async fn ended(&self) {
        let mut ended = self.ended.subscribe();
        let _ = ended.wait_for(|ended| *ended).await;
    }

    /// Parks `op` until the first map, its caller waiting at most `timeout`;
    /// gives `op` back once the first read has ended (route it now).
    pub(super) fn park(
        &self,
        op: Op,
        timeout: Duration,
    ) -> Result<BoxFuture<'static, Answered>, Op> {
        let mut parked = crate::sync::lock(&self.parked);
        let Some(queue) = parked.as_mut() else {
            return Err(op);
        };
        let deadline = Instant::now() + timeout;
        let (routed, answer) = oneshot::channel();
        queue.push_back(Parked {
            op,
            deadline,
            routed,
        });
        Ok(Box::pin(async move {
            let answered = tokio::time::timeout_at(deadline, async move {
                match answer.await {
                    Ok(Ok(answer)) => answer.await,
                    Ok(Err(cause)) => unanswered(cause),
                    Err(_dropped) => unanswered(FredError::new(
                        ErrorKind::Canceled,
                        "the cluster master closed before its first slot map was read",
                    )),
                }
            })
            .await;
            answered.unwrap_or_else(|_elapsed| {
                unanswered(FredError::new(
                    ErrorKind::Timeout,
                    "no answer within the node timeout, the wait for the cluster's first slot map included",
                ))
            })
        }))
    }

    /// Ends the first read: every parked operation, oldest first, goes to
    /// `route` (which sends it), unless its caller's wait is over and it
    /// only reads. Under the parking lock, so none is overtaken. Must be
    /// called within a Tokio runtime.
    pub(super) fn end(&self, mut route: impl FnMut(Op) -> Routed) {
        let mut parked = crate::sync::lock(&self.parked);
        let now = Instant::now();
        for waiting in parked.take().into_iter().flatten() {
            let wait_over = waiting.deadline <= now;
            if wait_over && waiting.op.only_reads() {
                continue;
            }
            let routed = route(waiting.op);
            let unwanted = if wait_over {
                Err(routed)
            } else {
                waiting.routed.send(routed)
            };
            // Nobody waits for it: run to its end here, or a batcher that
            // queued it would drop it unsent.
            if let Err(Ok(answer)) = unwanted {
                tokio::spawn(answer);
            }
        }
        drop(parked);
        self.ended.send_replace(true);
    }
}

/// The answer of an operation that reached no server.
fn unanswered(cause: FredError) -> Answered {
    Answered {
        reply: Err(cause),
        by: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::op::Code;

    /// Routes by answering each operation with its code's name, recording the order.
    fn recorder(order: &mut Vec<Code>) -> impl FnMut(Op) -> Routed + '_ {
        |op: Op| {
            order.push(op.code);
            let reply = Err(FredError::new(ErrorKind::Unknown, format!("{:?}", op.code)));
            Ok(Box::pin(async move { unanswered_reply(reply) }) as BoxFuture<'static, Answered>)
        }
    }

    fn unanswered_reply(reply: crate::protocol::op::Reply) -> Answered {
        Answered { reply, by: None }
    }

    fn detail(answered: &Answered) -> String {
        answered.reply.as_ref().unwrap_err().details().to_owned()
    }

    #[tokio::test]
    async fn parked_operations_are_routed_in_the_order_they_came_then_none_is_parked() {
        let first = FirstMap::new();
        let acquire = first
            .park(Op::for_test(Code::Acquire), Duration::from_secs(5))
            .unwrap();
        let release = first
            .park(Op::for_test(Code::Release), Duration::from_secs(5))
            .unwrap();
        let mut order = Vec::new();
        first.end(recorder(&mut order));
        assert_eq!(order, [Code::Acquire, Code::Release]);
        assert_eq!(detail(&acquire.await), "Acquire");
        assert_eq!(detail(&release.await), "Release");
        assert!(!first.reading());
        assert!(
            first
                .park(Op::for_test(Code::Acquire), Duration::from_secs(5))
                .is_err()
        );
        first.ended().await;
    }

    #[tokio::test]
    async fn a_caller_that_stopped_waiting_has_its_operation_sent_all_the_same() {
        let first = FirstMap::new();
        drop(
            first
                .park(Op::for_test(Code::Acquire), Duration::from_secs(5))
                .unwrap(),
        );
        let mut order = Vec::new();
        first.end(recorder(&mut order));
        assert_eq!(order, [Code::Acquire]);
    }

    #[tokio::test]
    async fn past_its_wait_all_but_a_read_is_sent_and_the_caller_hears_a_timeout() {
        let first = FirstMap::new();
        // No wait at all: all are past it when the map comes.
        let [acquire, inspect, release] = [Code::Acquire, Code::Inspect, Code::Release]
            .map(|code| first.park(Op::for_test(code), Duration::ZERO).unwrap());
        let timed_out = acquire.await;
        assert_eq!(timed_out.reply.unwrap_err().kind(), &ErrorKind::Timeout);
        let mut order = Vec::new();
        first.end(recorder(&mut order));
        assert_eq!(order, [Code::Acquire, Code::Release]);
        drop((inspect, release));
    }
}
