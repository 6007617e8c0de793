//! The workload's clients: one client's loop (`client.rs`: lock a random
//! resource, use it as its holder kind says, release it, record the
//! session), a hold the lock keeps alive itself (`kept.rs`), the
//! random future drops that test cancellation (`cancel.rs`), a hold handed
//! over to two adopters at once (`hand_over.rs`), and the owner tokens each
//! acquire tried (`attempts.rs`).
//!
//! May import: the [`Locker`](crate::Locker) (`locker.rs`), the workload's
//! settings (`workload_config.rs`), the [`ProtectedStore`](crate::ProtectedStore)
//! and `evidence`. Must never import `workload.rs` (it starts the clients)
//! or the torture run.

mod attempts;
mod cancel;
mod client;
mod hand_over;
mod kept;

pub use attempts::note_attempt;
pub(crate) use client::Client;
