//! The election's two commands: `redquorum elect` campaigns and runs a
//! command while leader (`election/elect.rs`, on exec's run path), and
//! `redquorum leader` says who leads, once or as a stream
//! (`election/leader.rs`).

pub(crate) mod elect;
pub(crate) mod leader;
