//! Where the nodes come from: `--nodes`/`REDQUORUM_NODES`, or local ones started here.

use redquorum_harness::Cluster;

/// The `--nodes` list as given (possibly empty).
#[derive(Debug, Clone)]
pub(crate) struct NodesArg(pub(crate) Vec<String>);

/// Nodes to run against: the user's, or a local cluster kept alive by this value.
#[derive(Debug)]
pub(crate) enum Nodes {
    /// Given with `--nodes` / `REDQUORUM_NODES`.
    Given(Vec<String>),
    /// Started here; stopped when dropped.
    Local(Cluster),
}

impl Nodes {
    pub(crate) fn urls(&self) -> Vec<String> {
        match self {
            Nodes::Given(urls) => urls.clone(),
            Nodes::Local(cluster) => cluster.urls(),
        }
    }

    pub(crate) fn local(&self) -> Option<&Cluster> {
        match self {
            Nodes::Local(cluster) => Some(cluster),
            Nodes::Given(_) => None,
        }
    }
}

impl NodesArg {
    /// The given nodes, or `count` local `redis-server` nodes started now.
    pub(crate) fn given_or_local(
        &self,
        count: usize,
    ) -> Result<Nodes, redquorum_harness::HarnessError> {
        let urls: Vec<String> = self
            .0
            .iter()
            .map(|u| u.trim().to_owned())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            Cluster::start(count).map(Nodes::Local)
        } else {
            Ok(Nodes::Given(urls))
        }
    }
}
