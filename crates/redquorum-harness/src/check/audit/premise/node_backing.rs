//! What a node showed of a hold at the audit read that broke the premise
//! ([`NodeBacking`]): found by the premise rule (`unbacked.rs`), reported in
//! its `Violation` (`violation/`).

use std::time::Duration;

/// One node's state at the read that broke the premise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeBacking {
    /// The node.
    pub node: usize,
    /// The latest the hold can have expired there (read answer time plus
    /// time left); `None`: the read did not show it.
    pub expires: Option<Duration>,
}
