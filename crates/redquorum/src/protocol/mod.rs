//! The Redlock protocol as data and arithmetic, with no I/O and no tasks:
//! a hold as data and the operations of each kind (`claim.rs`), one
//! operation as data (`op.rs`), the key layout (`keys.rs`), the Lua script
//! every operation runs in (`scripts/ops.lua`, and `scripts/fenced_write.lua`
//! for [`FencedWriter`](crate::FencedWriter)), a node's answer read as a
//! vote (`vote.rs`), the quorum arithmetic and the decision (`tally.rs`),
//! the lease maths (`validity.rs`), the fencing token and its choice
//! (`fence.rs`), the owner token (`token.rs`) and owner information
//! (`owner_info.rs`).
//!
//! May import: `outcome.rs`, `node_error.rs`, `node_id.rs`, `mutants.rs`
//! (and fred's data types, never a client).
//!
//! Must never import: anything that talks to a node, waits or spawns
//! (`node/`, `quorum/`, `wait/`, `lease/`, and above), nor `error.rs`,
//! `observe.rs` or `options.rs`, which sit above it (`error.rs` names a
//! [`FenceToken`]).

pub(crate) mod claim;
pub(crate) mod fence;
pub(crate) mod keys;
pub(crate) mod op;
pub(crate) mod owner_info;
pub(crate) mod tally;
pub(crate) mod token;
pub(crate) mod validity;
pub(crate) mod vote;

pub use fence::FenceToken;
pub use owner_info::OwnerInfo;
pub use token::OwnerToken;
