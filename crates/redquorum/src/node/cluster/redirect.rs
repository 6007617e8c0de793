//! What undoes earlier operations (a release, an unwind) on a cluster
//! master follows the cluster's redirections to where its keys are now
//! (node/cluster.rs): `MOVED` and `CLUSTERDOWN` after a new slot map,
//! `ASK` once after `ASKING`, `TRYAGAIN` after a pause; within the node
//! timeout. It must land even when its caller stops waiting (a release
//! returns at a quorum): [`DetachOnDrop`] finishes it in the background.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use fred::error::Error as FredError;
use futures::future::BoxFuture;
use tokio::runtime::Handle;

use super::{ClusterMaster, MAX_REDIRECTS, on_shard};
use crate::node::slots::Redirect;
use crate::protocol::op::{Op, Reply};

impl ClusterMaster {
    /// Sends a release again where the keys are now, following up to
    /// [`MAX_REDIRECTS`] redirections within the node timeout.
    pub(super) async fn follow(&self, op: Op, mut redirect: Redirect, first: FredError) -> Reply {
        let deadline = tokio::time::Instant::now() + self.settings.node_timeout;
        let mut last = first;
        for _ in 0..MAX_REDIRECTS {
            let reply = match &redirect {
                Redirect::Ask(address) => {
                    let target = self
                        .read()
                        .shards
                        .get(address)
                        .map(|s| Arc::clone(&s.server));
                    match target {
                        Some(target) => target.run_asking(&op).await,
                        None => {
                            self.next_map(deadline).await;
                            continue;
                        }
                    }
                }
                Redirect::Moved(_) | Redirect::Down => {
                    self.next_map(deadline).await;
                    self.resend(&op).await
                }
                Redirect::TryAgain => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    self.resend(&op).await
                }
            };
            match reply {
                Err(error) => match Redirect::parse(error.details()) {
                    Some(next) if tokio::time::Instant::now() < deadline => {
                        redirect = next;
                        last = error;
                    }
                    _ => return Err(error),
                },
                ok => return ok,
            }
        }
        Err(last)
    }

    /// `op` through the primary now serving its keys.
    async fn resend(&self, op: &Op) -> Reply {
        let server = self.route(op)?;
        match server.submit(op.clone()) {
            Ok(answer) => answer.await.map_err(|error| on_shard(&server, error)),
            Err(cause) => Err(on_shard(&server, cause)),
        }
    }

    /// Waits (until `deadline`) for a slot map read after now.
    async fn next_map(&self, deadline: tokio::time::Instant) {
        let mut maps = self.maps_read.subscribe();
        maps.mark_unchanged();
        self.wake.notify_one();
        let _ = tokio::time::timeout_at(deadline, maps.changed()).await;
    }
}

/// A future that, dropped before it completes, is finished on `runtime`
/// instead of cancelled. Polled to the end, it costs no task.
pub(super) struct DetachOnDrop<T: Send + 'static> {
    future: Option<BoxFuture<'static, T>>,
    runtime: Handle,
}

impl<T: Send + 'static> DetachOnDrop<T> {
    pub(super) fn new(future: BoxFuture<'static, T>, runtime: Handle) -> Self {
        Self {
            future: Some(future),
            runtime,
        }
    }
}

impl<T: Send + 'static> Future for DetachOnDrop<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(future) = self.future.as_mut() else {
            return Poll::Pending;
        };
        let output = std::task::ready!(future.as_mut().poll(cx));
        self.future = None;
        Poll::Ready(output)
    }
}

impl<T: Send + 'static> Drop for DetachOnDrop<T> {
    fn drop(&mut self) {
        if let Some(future) = self.future.take() {
            drop(self.runtime.spawn(future));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dropped_before_its_end_it_still_runs_to_the_end() {
        let (sent, received) = tokio::sync::oneshot::channel();
        let detached = DetachOnDrop::new(
            Box::pin(async move {
                tokio::task::yield_now().await;
                let _ = sent.send("finished");
            }),
            Handle::current(),
        );
        let mut detached = Box::pin(detached);
        assert!(futures::poll!(detached.as_mut()).is_pending());
        drop(detached);
        assert_eq!(received.await, Ok("finished"));
    }

    #[tokio::test]
    async fn polled_to_its_end_it_gives_the_output() {
        let detached = DetachOnDrop::new(Box::pin(async { 7 }), Handle::current());
        assert_eq!(detached.await, 7);
    }
}
