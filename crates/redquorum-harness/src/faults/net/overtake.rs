//! The one interleaving of [`ProxyMode::FlushScripts`](super::ProxyMode::FlushScripts)
//! a client's batching rarely makes on its own: a NOSCRIPT answer to a
//! batch of operations (a flush aimed `Wide`, `aim.rs`) that reaches the
//! client only after its next call has gone out. The client must then split
//! the batch: operations that can create a hold fail (a resend could land
//! after their unwind), the others go again, and each answer must find its
//! own operation. Left to chance, that happened a few times a minute in the
//! default run; held for it, after nearly every batch the flush struck
//! while the client had more to send.
//!
//! One connection's requests side counts the chunks it forwards and marks
//! the batch it flushed; the replies side holds that batch's NOSCRIPT
//! answer until a later chunk has been forwarded, for at most
//! [`OVERTAKE_WITHIN`] (a client with nothing more to send gets it then).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

/// The longest a batch's NOSCRIPT answer waits for a later call: well
/// inside a client's node timeout (100 ms in the torture), so the answer is
/// late but not lost.
pub(crate) const OVERTAKE_WITHIN: Duration = Duration::from_millis(20);

/// One connection's requests as its replies side sees them.
#[derive(Debug)]
pub(super) struct Overtake {
    /// Request chunks forwarded so far.
    forwarded: watch::Sender<u64>,
    /// The number of the chunk that carried the last batch a flush was
    /// aimed at (chunks count from 1), or 0 when none waits for its answer.
    batch: AtomicU64,
}

impl Default for Overtake {
    fn default() -> Self {
        Self {
            forwarded: watch::Sender::new(0),
            batch: AtomicU64::new(0),
        }
    }
}

impl Overtake {
    /// The requests side flushed ahead of a batch, in the chunk it
    /// forwards next.
    pub(super) fn batch_flushed(&self) {
        self.batch
            .store(*self.forwarded.borrow() + 1, Ordering::SeqCst);
    }

    /// The requests side forwarded a chunk.
    pub(super) fn forwarded(&self) {
        self.forwarded.send_modify(|n| *n += 1);
    }

    /// For a NOSCRIPT answer: if a flushed batch waits for its answer,
    /// waits until a chunk after it was forwarded, at most `within`.
    /// `None`: no batch waited; else whether a later call overtook it.
    pub(super) async fn overtaken(&self, within: Duration) -> Option<bool> {
        let batch = self.batch.swap(0, Ordering::SeqCst);
        if batch == 0 {
            return None;
        }
        let mut forwarded = self.forwarded.subscribe();
        let passed = tokio::time::timeout(within, forwarded.wait_for(|&n| n > batch)).await;
        Some(matches!(passed, Ok(Ok(_))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_batch_answer_waits_for_the_next_chunk() {
        let overtake = std::sync::Arc::new(Overtake::default());
        assert_eq!(overtake.overtaken(OVERTAKE_WITHIN).await, None);
        overtake.batch_flushed();
        overtake.forwarded(); // the batch itself
        let waiting = {
            let overtake = overtake.clone();
            tokio::spawn(async move { overtake.overtaken(Duration::from_secs(30)).await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        overtake.forwarded(); // the client's next call
        assert_eq!(waiting.await.unwrap(), Some(true));
        // Marked once: the next NOSCRIPT answer is not held.
        assert_eq!(overtake.overtaken(OVERTAKE_WITHIN).await, None);
    }

    #[tokio::test]
    async fn an_answer_with_nothing_behind_it_goes_after_the_bound() {
        let overtake = Overtake::default();
        overtake.batch_flushed();
        overtake.forwarded();
        let started = std::time::Instant::now();
        assert_eq!(
            overtake.overtaken(Duration::from_millis(5)).await,
            Some(false)
        );
        assert!(started.elapsed() >= Duration::from_millis(5));
    }
}
