//! An operator's calls: list the resources held under a prefix, and
//! force-release a resource whose holder is stuck or gone.

use crate::error::Error;
use crate::node_error::NodeError;
use crate::outcome::{NodeOutcome, Outcomes};
use crate::protocol::fence::FenceToken;
use crate::protocol::keys;
use crate::quorum::tally;
use crate::redlock::Redlock;

/// At most this many SCAN calls per node for one listing.
const MAX_SCAN_CALLS: usize = 1_000;

impl Redlock {
    /// The names of the resources whose lock is held (of any kind, or kept
    /// by a lock-delay or a waiting writer) on a quorum of nodes, among
    /// those whose name starts with `name_prefix`; sorted, at most `limit`.
    ///
    /// Bounded: each node is read with SCAN (never KEYS), at most about
    /// `limit` keys and a thousand calls per node, so on a node with a huge
    /// keyspace the listing may be incomplete (it never blocks the node).
    /// The ACL user needs `+scan`.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when fewer than a quorum of nodes could be read.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let a = redlock.try_lock("jobs:a").await?;
    /// let b = redlock.try_read_lock("jobs:b").await?;
    /// let other = redlock.try_lock("mail").await?;
    /// assert_eq!(redlock.list("jobs:", 100).await?, ["jobs:a", "jobs:b"]);
    /// # drop((a, b, other));
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, name_prefix: &str, limit: usize) -> Result<Vec<String>, Error> {
        let pattern = keys::scan_pattern(self.key_prefix(), name_prefix);
        let nodes = self.shared_quorum().nodes();
        nodes.first_connect().await;
        let scans = nodes
            .iter()
            .map(|node| node.scan(&pattern, limit, MAX_SCAN_CALLS));
        let answers = futures::future::join_all(scans).await;
        let mut names_per_node = Vec::new();
        let mut entries = Vec::new();
        for (node, answer) in nodes.iter().zip(answers) {
            match answer {
                Ok(found) => {
                    entries.push((node.id().clone(), NodeOutcome::Acquired));
                    let names = found
                        .into_iter()
                        .filter_map(|key| keys::resource_of(self.key_prefix(), &key));
                    names_per_node.push(names.collect::<Vec<String>>());
                }
                Err(error) => {
                    let error = NodeError::new(node.id().clone(), error);
                    entries.push((node.id().clone(), NodeOutcome::Failed(error)));
                }
            }
        }
        let quorum = self.quorum();
        if entries.iter().filter(|(_, o)| o.is_acquired()).count() < quorum {
            return Err(Error::Unavailable {
                resource: format!("{name_prefix}*"),
                outcomes: Outcomes::of_read(entries, quorum),
            });
        }
        let mut held = tally::on_quorum(names_per_node, quorum);
        held.truncate(limit);
        Ok(held)
    }

    /// Releases `resource` whoever holds it, of any kind (all its holds, a
    /// waiting writer's intent, a lock-delay): reads what every node has on
    /// it, removes exactly that on every node (a removal that lands late,
    /// on a node that was away, cannot oust a holder that came after), and
    /// raises its fence counter on a quorum: the returned token is above every token
    /// the ousted holders were or can be issued (their write-back is
    /// owner-checked and now fails) and below every later holder's, so
    /// storage that checks tokens can be given it to refuse them from now on.
    /// Logged at `warn`. An ousted holder's lease ends when its next
    /// extension fails. A semaphore's slots are freed as their permits
    /// expire (force-releasing its name makes their extensions fail).
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when fewer than a quorum of nodes could be
    /// read, or did it (the resource may be free on some of them: call it
    /// again);
    /// [`Error::EmptyResource`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let stuck = redlock.try_lock("report").await?;
    /// let fence = redlock.force_release("report").await?;
    /// assert!(stuck.fence().await.is_err()); // the ousted holder gets no token
    /// let next = redlock.try_lock("report").await?; // free at once
    /// assert!(next.fence().await? > fence);
    /// # Ok(()) }
    /// ```
    pub async fn force_release(&self, resource: &str) -> Result<FenceToken, Error> {
        if resource.is_empty() {
            return Err(Error::EmptyResource);
        }
        let keys = self.resource_keys(resource);
        let result = self.shared_quorum().force_release(resource, &keys).await;
        match &result {
            // Asked for, and its result is the caller's: info, not a warning
            // (the `redquorum release --force` line is the operator's record).
            Ok(counter) => tracing::info!(resource, fence = counter, "force-released"),
            Err(error) => tracing::warn!(resource, %error, "force-release failed"),
        }
        // Scripts return integers; a negative one would mean a corrupt counter.
        result.map(|counter| FenceToken::new(u64::try_from(counter).unwrap_or(0)))
    }
}
