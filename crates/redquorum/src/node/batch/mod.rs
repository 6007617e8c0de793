//! Group commit on one server's connection: the [`Batcher`] (`batcher.rs`)
//! sends what its callers entered while calls are in flight as one call of
//! the lock script, over its queue (`queue.rs`: the calls in flight and
//! the operations waiting, as pure state); one call, sent, answered and
//! resent after NOSCRIPT, in `batcher_call.rs`, which a release's resend
//! must not overtake a later hold of its token (`holds_sent.rs`); tests on
//! a real node in `batcher_tests.rs` and, for the resends,
//! `batcher_again_tests.rs`. On a cluster shard, every answer carries the
//! server's replication id (`replication_id.rs`).
//!
//! May import: `link.rs` (whether the node is up), `script.rs` (the
//! script cache), `protocol/` (an operation as data), and the root
//! vocabulary. Must never import `server.rs` (it owns a batcher) or
//! anything above a node.

mod batcher;
mod holds_sent;
mod queue;
pub(crate) mod replication_id;

pub(crate) use batcher::Batcher;
