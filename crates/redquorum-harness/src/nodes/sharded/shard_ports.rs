//! One shard of a local Redis Cluster by its nodes' ports ([`ShardPorts`]):
//! what forming a cluster (`form.rs`), waiting for it to settle
//! (`settle.rs`) and placing the shards (`placement.rs`) all speak of.

/// One shard's nodes, by port: its primary and, if any, its replica.
///
/// # Examples
///
/// ```
/// let shard = redquorum_harness::ShardPorts { primary: 7301, replica: Some(7302) };
/// assert_eq!(shard.ports(), vec![7301, 7302]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardPorts {
    /// The port of the node that owns the shard's slots.
    pub primary: u16,
    /// The port of its replica.
    pub replica: Option<u16>,
}

impl ShardPorts {
    /// The shard's ports, primary first.
    ///
    /// # Examples
    ///
    /// ```
    /// let shard = redquorum_harness::ShardPorts { primary: 7301, replica: None };
    /// assert_eq!(shard.ports(), vec![7301]);
    /// ```
    #[must_use]
    pub fn ports(&self) -> Vec<u16> {
        std::iter::once(self.primary).chain(self.replica).collect()
    }
}
