//! Cooperative revocation: asking a lock's holders to let go
//! ([`Redlock::ask_release`]), and waiting until they did. The hard way
//! out stays [`Redlock::force_release`].

use std::time::{Duration, Instant};

use crate::error::Error;
use crate::outcome::{NodeOutcome, Outcomes};
use crate::protocol::resource_ops;
use crate::protocol::token::OwnerToken;
use crate::redlock::Redlock;

/// How often a waiting asker asks again: a holder that was not listening
/// yet (or a subscriber connection that was reconnecting) hears the next.
const ASK_AGAIN: Duration = Duration::from_secs(1);

impl Redlock {
    /// Asks whoever holds `resource` to let go, and waits up to `wait` for
    /// the lock to be free. Holders hear it through
    /// [`Lock::release_asked`](crate::Lock::release_asked) (`redquorum exec
    /// --on-ask` forwards it to its command as a signal); a holder that
    /// does not listen, or does not let go, keeps the lock: this is a
    /// request, not [`force_release`](Self::force_release).
    ///
    /// The ask is announced on every node (a message on the lock's ask
    /// channel; nothing is written) and repeated every second while it
    /// waits. Returns `true` once no hold is left on a quorum of the nodes
    /// (at once if nobody held it), `false` if one still is at `wait`'s end.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when too few nodes answered to tell;
    /// [`Error::EmptyResource`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use std::time::Duration;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let lock = redlock.lock("report").await?;
    /// let holder = tokio::spawn(async move {
    ///     lock.release_asked().await; // ... finish up, then:
    ///     lock.release().await
    /// });
    /// let asker = redlock.clone();
    /// assert!(asker.ask_release("report", Duration::from_secs(5)).await?);
    /// holder.await??;
    /// # Ok(()) }
    /// ```
    pub async fn ask_release(&self, resource: &str, wait: Duration) -> Result<bool, Error> {
        if resource.is_empty() {
            return Err(Error::EmptyResource);
        }
        let deadline = Instant::now() + wait;
        let keys = self.resource_keys(resource);
        let tag = format!("ask:{}", OwnerToken::random());
        let quorum = self.shared_quorum();
        loop {
            let asked = quorum.read_all(resource_ops::ask(&keys, &tag)).await;
            let answered = asked.iter().filter(|(_, a)| a.is_ok()).count();
            let held_on = (asked.iter())
                .filter(|(_, answer)| matches!(answer, Ok(fred::types::Value::Integer(1))))
                .count();
            if held_on < self.quorum() {
                // Fewer than a quorum hold it: free for the next taker,
                // unless too few answered to tell.
                if answered - held_on >= self.quorum() {
                    return Ok(true);
                }
                let entries = (asked.into_iter())
                    .map(|(node, answer)| match answer {
                        Ok(_) => (node, NodeOutcome::Acquired),
                        Err(error) => (node, NodeOutcome::Failed(error)),
                    })
                    .collect();
                return Err(Error::Unavailable {
                    resource: resource.to_owned(),
                    outcomes: Outcomes::of_read(entries, self.quorum()),
                });
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            quorum
                .release_heard(keys.lock_str(), ASK_AGAIN, deadline)
                .await;
        }
    }
}
