//! Waiting until every node of a fresh lock client votes: a torture run
//! starts its clock then, not while every attempt is refused (fresh nodes
//! vote only once they have been up for `max_ttl`).

use std::time::{Duration, Instant};

use redquorum::Redlock;

/// Waits until no node of `redlock` has its vote refused, or `within`
/// passed (the run then starts anyway; its report shows the refusals).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// redquorum_adapter::wait_for_votes(&redlock, std::time::Duration::from_secs(5)).await;
/// assert!(redlock.health().await.iter().all(|(_, h)| h.refusal().is_none()));
/// # Ok(()) }
/// ```
pub async fn wait_for_votes(redlock: &Redlock, within: Duration) {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline
        && redlock
            .health()
            .await
            .iter()
            .any(|(_, h)| h.refusal().is_some())
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
