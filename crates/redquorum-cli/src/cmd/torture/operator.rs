//! The torture run's operator calls on the library: it inspects resources
//! (`Redlock::inspect`: the holders a quorum names) and force-releases them
//! (`Redlock::force_release`), and asks holders to let go
//! (`Redlock::ask_release`); the harness calls them at the run's pace,
//! through the fault proxies of the first client group, and records each
//! call for the checker (the harness's `check/operator.rs` has the promises
//! it holds them to).

use redquorum::Redlock;
use redquorum_harness::{ASK_WAIT, Inspected, TortureOperator};

/// The library's operator calls, on its own lock handle.
#[derive(Debug)]
pub(crate) struct Operator(pub(crate) Redlock);

impl TortureOperator for Operator {
    async fn inspect(&self, resource: &str) -> Option<Inspected> {
        let redlock = &self.0;
        let inspection = redlock.inspect(resource).await.ok()?;
        let mut inspected = Inspected::default();
        for (_, view) in inspection.nodes() {
            let Ok(view) = view else { continue };
            inspected.answered += 1;
            for hold in view.holds() {
                *inspected
                    .reported
                    .entry(hold.token().to_owned())
                    .or_default() += 1;
            }
        }
        let holders = inspection.holders(redlock.quorum());
        inspected.holders = holders.into_iter().map(|(_, token)| token).collect();
        Some(inspected)
    }

    async fn ask_release(&self, resource: &str) -> Option<bool> {
        self.0.ask_release(resource, ASK_WAIT).await.ok()
    }

    fn asks(&self) -> bool {
        true
    }

    async fn force_release(&self, resource: &str) -> Option<u64> {
        self.0
            .force_release(resource)
            .await
            .ok()
            .map(|token| token.get())
    }
}
