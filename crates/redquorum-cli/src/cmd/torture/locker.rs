//! `redquorum::Redlock` as the harness's `Locker` (the harness cannot
//! depend on the library, which dev-depends on the harness).

use std::time::Instant;

use redquorum::{Error, Lock, Redlock};
use redquorum_harness::{Grant, Locker};

/// The lock under test.
pub(super) struct RedlockLocker(pub(super) Redlock);

impl Locker for RedlockLocker {
    type Held = Lock;

    async fn acquire(&self, resource: &str) -> Result<Grant<Lock>, String> {
        match self.0.lock(resource).await {
            Ok(lock) => {
                let owner = lock.owner().to_string();
                let deadline = lock.deadline();
                let fence = fence_token(&lock).await;
                Ok(Grant::new(lock, owner, deadline).with_fence(fence))
            }
            Err(e) => Err(refusal(&e).to_owned()),
        }
    }

    async fn extend(&self, lock: &mut Lock) -> Result<Instant, String> {
        match lock.extend().await {
            Ok(_) => Ok(lock.deadline()),
            Err(e) => Err(refusal(&e).to_owned()),
        }
    }

    async fn release(&self, lock: Lock) {
        // A failed release leaves the key to its TTL; the audit and the leak check cover it.
        let _ = lock.release().await;
    }
}

/// The one place the workload reads the lock's fencing token (the checker
/// requires tokens to increase in grant order, and the store refuses stale
/// ones). The write-back may fail (the lease ran out first, or no quorum
/// confirmed it): then the holder has no token, and does not touch a fenced store.
async fn fence_token(lock: &Lock) -> Option<u64> {
    lock.fence().await.ok().map(|token| token.get())
}

/// A short name for why a lock was refused.
fn refusal(error: &Error) -> &'static str {
    match error {
        Error::Contended { .. } => "contended",
        Error::Unavailable { .. } => "unavailable",
        Error::Expired { .. } => "expired",
        Error::NotHeld { .. } => "not-held",
        Error::Lost { .. } => "lost",
        Error::WaitTimeout { last, .. } => refusal(last),
        _ => "other",
    }
}
