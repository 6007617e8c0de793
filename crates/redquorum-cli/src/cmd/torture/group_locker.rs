//! What one client group of the torture locks with: the library through
//! the benchmarks' adapter (`MixedLocker`), and in the default run's exec
//! group, now and then, a holder in another process: `redquorum exec`
//! (`exec_holder.rs`).

use std::time::Instant;

use redquorum_benches::{HeldKind, MixedLocker};
use redquorum_harness::{Grant, History, Locker, ProtectedStore, Refusal, Session};

use super::exec_holder::ExecHolder;

/// A client group's lock: the library's, and maybe `exec`.
#[derive(Debug)]
pub(crate) struct GroupLocker {
    pub(super) library: MixedLocker,
    pub(super) exec: Option<ExecHolder>,
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

    async fn outside(
        &self,
        resource: &str,
        history: &History,
        store: &ProtectedStore,
    ) -> Option<Session> {
        match &self.exec {
            Some(exec) => exec.session(resource, history, store).await,
            None => None,
        }
    }

    fn client_commands(&self) -> &'static [&'static str] {
        self.library.client_commands()
    }
}
