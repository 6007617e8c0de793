//! The lock kinds: every public lock type and the `Redlock` methods that
//! take them ([`Lock`](crate::Lock), read-write, reentrant, any-of-K,
//! all-of-a-set, the semaphore, the election), each a thin type over one
//! hold of the lease layer (`lease/held.rs`); `held_methods.rs` writes the
//! methods they share once. This is where a caller's words ("lock",
//! "acquire a permit", "campaign") become a claim of some kind on the one
//! engine below.
//!
//! May import: `redlock/` (the handle they extend), `admin/` (a
//! [`Leader`] is read from an inspection), `lease/`, `quorum/` (its drop
//! guard), `protocol/`, and the root vocabulary (errors, options, ids,
//! `mutants`).
//!
//! Must never import: `setup/` (a kind never builds a `Redlock`), and
//! `node/`, `wait/` or `health/` directly: a kind reaches the nodes only
//! through the handle and the coordinator. Nothing below imports a kind.

mod any_of;
mod election;
mod held_methods;
mod leader;
mod leadership;
mod lock;
mod multi_lock;
mod reentrant;
mod rwlock;
mod scoped;
mod semaphore;

pub use election::Election;
pub use leader::Leader;
pub use leadership::Leadership;
pub use lock::Lock;
pub use multi_lock::MultiLock;
pub use reentrant::{ReentrantLock, ReentrantOwner};
pub use rwlock::{ReadLock, WriteLock};
pub use semaphore::{Permit, Semaphore};

/// Fails the build unless `T` can move between threads and live anywhere
/// (the kinds' tests check their public types with it).
#[cfg(test)]
fn assert_send_sync_static<T: Send + Sync + 'static>() {}

/// Fails the build unless the value, a future of some call, is `Send` (the
/// kinds' tests check every public async call with it).
#[cfg(test)]
fn assert_send<T: Send>(_: &T) {}
