//! An operator's commands on the resources others lock: `redquorum list`,
//! what is held under a prefix (`operator/list.rs`), and `redquorum
//! release --force`, the way out when a holder is stuck or gone
//! (`operator/release.rs`). `redquorum status` (`status/`) shows the nodes.

pub(crate) mod list;
pub(crate) mod release;
