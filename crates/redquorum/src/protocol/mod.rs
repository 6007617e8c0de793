//! The Redlock protocol as data and the wire, with no I/O, no tasks and no
//! counting of votes: a hold as data and the operations of each kind
//! (`claim.rs`), one operation as data and its wire form (`op.rs`), the key
//! layout (`keys.rs`), the forms of an operation alone on a connection that cost
//! a node less than the lock script (`alone.rs`: a native `SET`, a small
//! release script, `scripts/plain_release.lua`), the Lua script every
//! operation runs in (its parts
//! in `scripts/ops/`, one concern each, joined at build time by
//! `node/script.rs` after the form's prelude, `scripts/single_prelude.lua`
//! or `scripts/cluster_prelude.lua`; and `scripts/fenced_write.lua` for
//! [`FencedWriter`](crate::FencedWriter)), the fencing token and its
//! protocol (`fence.rs`), the owner token (`token.rs`) and owner
//! information (`owner_info.rs`), and the operator's operations on a
//! resource whoever holds it (`resource_ops.rs`). What the nodes' answers
//! add up to is `quorum/`'s.
//!
//! May import: `outcome.rs`, `node_error.rs`, `node_id.rs`, `mutants.rs`
//! (and fred's data types, never a client).
//!
//! Must never import: `quorum/` (its arithmetic reads this data), anything
//! that talks to a node, waits or spawns (`node/`, `wait/`, `lease/`, and
//! above), nor `error/`, `metrics.rs` or `options.rs`, which sit above it
//! (`error/mod.rs` names a [`FenceToken`]).

pub(crate) mod alone;
pub(crate) mod claim;
pub(crate) mod fence;
pub(crate) mod keys;
pub(crate) mod op;
pub(crate) mod owner_info;
pub(crate) mod resource_ops;
pub(crate) mod token;

pub use fence::FenceToken;
pub use owner_info::OwnerInfo;
pub use token::OwnerToken;
