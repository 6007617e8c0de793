//! `Proxies`: a [`FaultProxy`] in front of every node for each client
//! group, so a fault on a node hits every group while a partition cuts one
//! group off from some nodes.

use std::io;
use std::time::Duration;

use super::forward::ProxyMode;
use super::proxy::FaultProxy;
use super::script_tally::ScriptCounts;
use crate::nodes::Cluster;

/// Fault proxies in front of a cluster: one per node for each client group,
/// so a fault on a node hits every group, and a partition can cut one group
/// off from some nodes while the others still reach them.
///
/// # Examples
///
/// ```
/// # let cluster = redquorum_harness::Cluster::start(3).unwrap();
/// let proxies = redquorum_harness::Proxies::start_groups(&cluster, 2).unwrap();
/// assert_eq!(proxies.urls_for(1).len(), 3);
/// proxies.get(0).stall(); // node 0, every group
/// proxies.group(1, 2).set_mode(redquorum_harness::ProxyMode::Refuse); // node 2, group 1 only
/// proxies.heal_all();
/// ```
#[derive(Debug)]
pub struct Proxies {
    /// `groups[g][node]`.
    groups: Vec<Vec<FaultProxy>>,
}

/// One node's proxies, one per client group; a change applies to all of them.
///
/// # Examples
///
/// ```
/// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
/// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
/// proxies.get(0).set_latency(std::time::Duration::from_millis(5));
/// proxies.get(0).heal();
/// ```
#[derive(Debug, Clone, Copy)]
pub struct NodeProxies<'a> {
    proxies: &'a Proxies,
    node: usize,
}

impl NodeProxies<'_> {
    fn each(&self, f: impl Fn(&FaultProxy)) {
        for group in &self.proxies.groups {
            f(&group[self.node]);
        }
    }

    /// See [`FaultProxy::set_mode`].
    pub fn set_mode(&self, mode: ProxyMode) {
        self.each(|p| p.set_mode(mode));
    }

    /// See [`FaultProxy::set_latency`].
    pub fn set_latency(&self, delay: Duration) {
        self.each(|p| p.set_latency(delay));
    }

    /// See [`FaultProxy::stall`].
    pub fn stall(&self) {
        self.each(FaultProxy::stall);
    }

    /// See [`FaultProxy::heal`].
    pub fn heal(&self) {
        self.each(FaultProxy::heal);
    }

    /// See [`FaultProxy::reset`].
    pub fn reset(&self) {
        self.each(FaultProxy::reset);
    }

    /// The longest any group's proxy held an answer back since the last
    /// call; `None` if a hold is still under way after `within` (see
    /// [`FaultProxy::take_longest_hold`]).
    #[must_use]
    pub fn take_longest_hold(&self, within: Duration) -> Option<Duration> {
        // Every group's is taken, so none carries over to the next call.
        let holds: Vec<Option<Duration>> = (self.proxies.groups.iter())
            .map(|group| group[self.node].take_longest_hold(within))
            .collect();
        holds
            .into_iter()
            .try_fold(Duration::ZERO, |longest, hold| Some(longest.max(hold?)))
    }

    /// The first group's proxy URL for this node.
    #[must_use]
    pub fn url(&self) -> String {
        self.proxies.groups[0][self.node].url()
    }

    /// The first group's current mode.
    #[must_use]
    pub fn mode(&self) -> ProxyMode {
        self.proxies.groups[0][self.node].mode()
    }
}

impl Proxies {
    /// Starts a proxy in front of every node of `cluster`, for one client group.
    ///
    /// # Errors
    ///
    /// See [`FaultProxy::start`].
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert_eq!(proxies.len(), 1);
    /// ```
    pub fn start(cluster: &Cluster) -> io::Result<Self> {
        Self::start_groups(cluster, 1)
    }

    /// Starts a proxy in front of every node of `cluster` for each of `groups` client groups.
    ///
    /// # Errors
    ///
    /// See [`FaultProxy::start`].
    ///
    /// # Examples
    ///
    /// See [`Proxies`].
    pub fn start_groups(cluster: &Cluster, groups: usize) -> io::Result<Self> {
        let groups = (0..groups.max(1))
            .map(|_| {
                (0..cluster.len())
                    .map(|i| FaultProxy::start(&cluster.host_port(i)))
                    .collect::<io::Result<Vec<_>>>()
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Self { groups })
    }

    /// The first group's proxied URLs, to give to the client under test.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert_eq!(proxies.urls()[0], proxies.get(0).url());
    /// ```
    #[must_use]
    pub fn urls(&self) -> Vec<String> {
        self.urls_for(0)
    }

    /// Client group `group`'s proxied URLs (the first group's if out of range).
    ///
    /// # Examples
    ///
    /// See [`Proxies`].
    #[must_use]
    pub fn urls_for(&self, group: usize) -> Vec<String> {
        self.groups
            .get(group)
            .unwrap_or(&self.groups[0])
            .iter()
            .map(FaultProxy::url)
            .collect()
    }

    /// Node `index`'s proxies, every group.
    ///
    /// # Panics
    ///
    /// If `index` is out of range (when used).
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// proxies.get(0).reset();
    /// ```
    #[must_use]
    pub fn get(&self, index: usize) -> NodeProxies<'_> {
        NodeProxies {
            proxies: self,
            node: index,
        }
    }

    /// Client group `group`'s proxy to node `node`.
    ///
    /// # Panics
    ///
    /// If either is out of range.
    ///
    /// # Examples
    ///
    /// See [`Proxies`].
    #[must_use]
    pub fn group(&self, group: usize, node: usize) -> &FaultProxy {
        &self.groups[group][node]
    }

    /// The number of client groups.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert_eq!(proxies.groups(), 1);
    /// ```
    #[must_use]
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The number of nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert!(!proxies.is_empty());
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.groups[0].len()
    }

    /// True when there are no nodes.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert!(!proxies.is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heals every proxy.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// proxies.heal_all();
    /// ```
    pub fn heal_all(&self) {
        for proxy in self.groups.iter().flatten() {
            proxy.heal();
        }
    }

    /// What went through every proxy of scripts and NOSCRIPT so far.
    ///
    /// # Examples
    ///
    /// ```
    /// # let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// # let proxies = redquorum_harness::Proxies::start(&cluster).unwrap();
    /// assert_eq!(proxies.script_counts().noscript, 0);
    /// ```
    #[must_use]
    pub fn script_counts(&self) -> ScriptCounts {
        self.groups
            .iter()
            .flatten()
            .fold(ScriptCounts::default(), |sum, p| {
                sum.plus(p.script_counts())
            })
    }
}
