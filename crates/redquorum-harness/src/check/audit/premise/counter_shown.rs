//! What a node's fence counter showed at the read that judged a token
//! ([`CounterShown`]): found by the token premise (`token_backing.rs`),
//! reported in its `Violation` (`violation/`).

use std::time::Duration;

/// One node's counter at the read that judged a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterShown {
    /// The node.
    pub node: usize,
    /// The counter it showed (0: none).
    pub value: u64,
    /// When that read was answered.
    pub at: Duration,
}
