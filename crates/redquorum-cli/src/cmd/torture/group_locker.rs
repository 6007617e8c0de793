//! What one client group of the torture locks with: the library through
//! the library's adapter (`redquorum_adapter::MixedLocker`), and in the default run's exec
//! group, now and then, a holder in another process: `redquorum exec`
//! (`outside/exec_holder.rs`), or an HTTP client of `redquorum serve`
//! (`outside/serve_holder.rs`).

use std::time::Instant;

use redquorum_adapter::{HeldKind, MixedLocker};
use redquorum_harness::{Grant, History, Locker, ProtectedStore, Refusal, Session};

use super::outside::exec_holder::ExecHolder;
use super::outside::serve_holder::ServeHolder;

/// A client group's lock: the library's, and maybe `exec` and `serve`.
#[derive(Debug)]
pub(crate) struct GroupLocker {
    pub(super) library: MixedLocker,
    pub(super) exec: Option<ExecHolder>,
    pub(super) serve: Option<ServeHolder>,
}

impl Locker for GroupLocker {
    type Held = HeldKind;

    async fn acquire(&self, resource: &str) -> Result<Grant<HeldKind>, Refusal> {
        self.library.acquire(resource).await
    }

    async fn extend(&self, held: &mut HeldKind) -> Result<Instant, Refusal> {
        self.library.extend(held).await
    }

    async fn release(&self, held: HeldKind) -> Result<(), String> {
        self.library.release(held).await
    }

    /// A plain hold's lease ticket, for two adopters of the group.
    fn hand_over(&self, held: HeldKind) -> redquorum_harness::HandOver<HeldKind> {
        self.library.hand_over(held)
    }

    async fn adopt(&self, ticket: &str) -> Result<Grant<HeldKind>, Refusal> {
        self.library.adopt(ticket).await
    }

    /// A kept hold's deadline, as the library's watchdog moves it.
    fn deadline(&self, held: &HeldKind) -> Option<Instant> {
        self.library.deadline(held)
    }

    /// When the library's watchdog sent a kept hold's last renewal.
    fn renewal_sent(&self, held: &HeldKind) -> Option<Instant> {
        self.library.renewal_sent(held)
    }

    /// A kept hold hears the library's asks to let go.
    fn release_asked(&self, held: &HeldKind) -> Option<redquorum_harness::Asked> {
        self.library.release_asked(held)
    }

    /// The library's shutdown: its releases' stragglers land before the
    /// group's runtime stops (without it, they were cut there).
    async fn close(&self) {
        self.library.close().await;
    }

    async fn outside(
        &self,
        resource: &str,
        history: &History,
        store: &ProtectedStore,
    ) -> Vec<Session> {
        if let Some(serve) = &self.serve {
            if let Some(session) = serve.session(resource, history, store).await {
                return vec![session];
            }
        }
        match &self.exec {
            Some(exec) => exec.sessions(resource, history, store).await,
            None => Vec::new(),
        }
    }

    fn client_commands(&self) -> &'static [&'static str] {
        self.library.client_commands()
    }
}

#[cfg(test)]
mod tests {
    use redquorum::Redlock;
    use redquorum_adapter::LockKind;
    use redquorum_harness::Cluster;

    use super::*;

    /// The group's lock is the library's in every way the workload asks:
    /// its hold's deadline and renewal, and its shutdown at the group's end.
    #[tokio::test]
    async fn the_deadline_and_the_shutdown_reach_the_library() {
        let cluster = Cluster::start(1).expect("a node");
        let redlock = Redlock::builder()
            .nodes(cluster.urls())
            .build()
            .expect("lock");
        let resources = vec!["r".to_owned()];
        let library = MixedLocker::single(redlock.clone(), LockKind::Plain, resources);
        let locker = GroupLocker {
            library,
            exec: None,
            serve: None,
        };
        let grant = locker.acquire("r").await.expect("granted");
        assert_eq!(locker.deadline(&grant.held), Some(grant.deadline));
        assert_eq!(
            locker.renewal_sent(&grant.held),
            locker.library.renewal_sent(&grant.held)
        );
        assert!(locker.renewal_sent(&grant.held).is_some());
        locker.release(grant.held).await.expect("released");
        locker.close().await;
        let after = redlock.try_lock("r").await;
        assert!(
            matches!(after, Err(redquorum::Error::Shutdown)),
            "{after:?}"
        );
    }
}
