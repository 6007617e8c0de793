//! Where the nodes come from: `--nodes`/`REDQUORUM_NODES`, or local ones started here.

use redquorum_harness::{Cluster, ShardedCluster};

/// The `--nodes` list, each URL trimmed (empty when none was given).
#[derive(Debug, Clone, Default)]
pub(crate) struct NodesArg(Vec<String>);

/// Nodes to run against: the user's, or a local cluster kept alive by this value.
#[derive(Debug)]
pub(crate) enum Nodes {
    /// Given with `--nodes` / `REDQUORUM_NODES`.
    Given(Vec<String>),
    /// Started here; stopped when dropped.
    Local(Cluster),
    /// Started here, each master a local Redis Cluster; stopped when dropped.
    Sharded(ShardedCluster),
}

impl Nodes {
    pub(crate) fn urls(&self) -> Vec<String> {
        match self {
            Nodes::Given(urls) => urls.clone(),
            Nodes::Local(cluster) => cluster.urls(),
            Nodes::Sharded(masters) => masters.urls(),
        }
    }

    /// The single-server nodes started here, if they were.
    pub(crate) fn local(&self) -> Option<&Cluster> {
        match self {
            Nodes::Local(cluster) => Some(cluster),
            Nodes::Given(_) | Nodes::Sharded(_) => None,
        }
    }

    /// The process a chaos step may kill on master `index`, started here:
    /// the master itself, or its first shard's primary (with its label).
    pub(crate) fn process_of(&self, index: usize) -> Option<(&Cluster, usize, &'static str)> {
        match self {
            Nodes::Local(cluster) => Some((cluster, index, "")),
            Nodes::Sharded(masters) => Some((
                masters.master(index),
                masters.primary_index(index, 0),
                " (its first shard's primary)",
            )),
            Nodes::Given(_) => None,
        }
    }

    /// Master `index`'s state, for a summary: down, or up with its keys
    /// (summed over a cluster's processes); `None` for given nodes.
    pub(crate) fn state(&self, index: usize) -> Option<String> {
        let (cluster, processes): (&Cluster, Vec<usize>) = match self {
            Nodes::Local(cluster) => (cluster, vec![index]),
            Nodes::Sharded(masters) => {
                let master = masters.master(index);
                (master, (0..master.len()).collect())
            }
            Nodes::Given(_) => return None,
        };
        let down = processes
            .iter()
            .filter(|&&i| !cluster.is_running(i))
            .count();
        if down == processes.len() {
            return Some("down".to_owned());
        }
        let keys: Option<i64> = processes
            .iter()
            .filter(|&&i| cluster.is_running(i))
            .map(|&i| {
                cluster
                    .command(i, &["DBSIZE"])
                    .ok()
                    .and_then(|r| r.as_int())
            })
            .sum();
        let keys = keys.map_or("?".to_owned(), |n| n.to_string());
        Some(match down {
            0 => format!("up, {keys} keys"),
            _ => format!("{down} of {} processes down, {keys} keys", processes.len()),
        })
    }
}

impl NodesArg {
    /// The list as clap split it at its commas. A blank value names no
    /// nodes; an empty entry in a list (a trailing comma, `a,,b`) is a
    /// usage error naming it, not dropped: it is a typo that may have cost
    /// a node.
    pub(crate) fn from_entries(entries: Vec<String>) -> Result<Self, String> {
        match entries.iter().position(|entry| entry.trim().is_empty()) {
            None => Ok(Self(entries.iter().map(|u| u.trim().to_owned()).collect())),
            // The whole value is blank (`REDQUORUM_NODES=`): no nodes.
            Some(_) if entries.len() == 1 => Ok(Self::default()),
            Some(at) => Err(format!(
                "--nodes (or REDQUORUM_NODES): entry {} of {} is empty (a trailing comma?): \
                 give comma-separated node URLs",
                at + 1,
                entries.len()
            )),
        }
    }

    /// Whether no nodes were given.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The given URLs.
    pub(crate) fn urls(&self) -> &[String] {
        &self.0
    }

    /// The given nodes, or `count` local `redis-server` nodes started now.
    pub(crate) fn given_or_local(
        &self,
        count: usize,
    ) -> Result<Nodes, redquorum_harness::HarnessError> {
        if self.is_empty() {
            Cluster::start(count).map(Nodes::Local)
        } else {
            Ok(Nodes::Given(self.0.clone()))
        }
    }

    /// The given nodes, or `count` local masters started now: single
    /// servers, or with `shards` each a local Redis Cluster of that many
    /// shards.
    pub(crate) fn given_or_local_sharded(
        &self,
        count: usize,
        shards: Option<usize>,
    ) -> Result<Nodes, redquorum_harness::HarnessError> {
        match shards {
            Some(shards) if self.is_empty() => {
                ShardedCluster::start(count, shards, 0).map(Nodes::Sharded)
            }
            _ => self.given_or_local(count),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[&str]) -> Result<Vec<String>, String> {
        NodesArg::from_entries(list.iter().map(|s| (*s).to_owned()).collect()).map(|n| n.0)
    }

    #[test]
    fn a_blank_value_is_no_nodes_and_an_empty_entry_in_a_list_is_refused() {
        assert_eq!(entries(&[]), Ok(vec![]));
        assert_eq!(entries(&[""]), Ok(vec![]));
        assert_eq!(entries(&[" "]), Ok(vec![]));
        assert_eq!(
            entries(&[" redis://a:1", "redis://b:2 "]),
            Ok(vec!["redis://a:1".to_owned(), "redis://b:2".to_owned()])
        );
        let err = entries(&["redis://a:1", ""]).unwrap_err();
        assert!(err.contains("entry 2 of 2 is empty"), "{err}");
        let err = entries(&["", ""]).unwrap_err();
        assert!(err.contains("entry 1 of 2 is empty"), "{err}");
        let err = entries(&["redis://a:1", " ", "redis://b:2"]).unwrap_err();
        assert!(err.contains("entry 2 of 3 is empty"), "{err}");
    }
}
