//! The torture run's operator calls on the library: it inspects resources
//! (`Redlock::inspect`: the holders a quorum names) and force-releases them
//! (`Redlock::force_release`); the harness calls them at the run's pace,
//! through the fault proxies of the first client group, and records each
//! call for the checker (the harness's `check/operator.rs` has the promises
//! it holds them to).

use redquorum::Redlock;
use redquorum_harness::TortureOperator;

/// The library's operator calls, on its own lock handle.
#[derive(Debug)]
pub(crate) struct Operator(pub(crate) Redlock);

impl TortureOperator for Operator {
    async fn inspect(&self, resource: &str) -> Option<(Vec<String>, usize)> {
        let redlock = &self.0;
        let inspection = redlock.inspect(resource).await.ok()?;
        let answered = inspection.nodes().filter(|(_, view)| view.is_ok()).count();
        let holders = inspection.holders(redlock.quorum());
        Some((
            holders.into_iter().map(|(_, token)| token).collect(),
            answered,
        ))
    }

    async fn force_release(&self, resource: &str) -> Option<u64> {
        self.0
            .force_release(resource)
            .await
            .ok()
            .map(|token| token.get())
    }
}
