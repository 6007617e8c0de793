//! Which owner tokens a session's acquire tried: the lock tells each
//! attempt's token to [`note_attempt`] (through its adapter), on the
//! acquiring task, and the client keeps them with the session
//! ([`Session::tried`](crate::Session::tried)), so a key a refused or dropped
//! attempt left behind is judged against that attempt's own end, not
//! against every attempt that was running when it was set.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

tokio::task_local! {
    static TRIED: Arc<Mutex<Vec<String>>>;
}

/// Records `owner`, the token of a lock attempt the current session's
/// acquire is about to send. A no-op outside a workload client's acquire
/// (an adapter may call it from any lock).
///
/// # Examples
///
/// ```
/// // Outside a workload's acquire nothing records it, and nothing fails.
/// redquorum_harness::note_attempt("0123456789abcdef0123456789abcdef");
/// ```
pub fn note_attempt(owner: &str) {
    let _ = TRIED.try_with(|tried| {
        tried
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(owner.to_owned());
    });
}

/// Runs `acquire` recording the tokens it tries into `tried`, which the
/// caller keeps: an acquire dropped part-way still leaves them there.
pub(crate) fn recording<F: Future>(
    tried: &Arc<Mutex<Vec<String>>>,
    acquire: F,
) -> impl Future<Output = F::Output> {
    TRIED.scope(Arc::clone(tried), acquire)
}

/// The tokens recorded into `tried` so far.
pub(crate) fn taken(tried: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
    std::mem::take(&mut *tried.lock().unwrap_or_else(PoisonError::into_inner))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tokens_are_kept_even_when_the_acquire_is_dropped() {
        let tried = Arc::default();
        let acquire = recording(&tried, async {
            note_attempt("a");
            tokio::task::yield_now().await;
            note_attempt("b");
            std::future::pending::<()>().await;
        });
        let cut = tokio::time::timeout(std::time::Duration::from_millis(20), acquire).await;
        assert!(cut.is_err());
        assert_eq!(taken(&tried), ["a", "b"]);
        // Only the scoped acquire records.
        note_attempt("c");
        assert!(taken(&tried).is_empty());
    }
}
