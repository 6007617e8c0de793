//! The workload's clients: one client's loop (`client.rs`: lock a random
//! resource, use it as its holder kind says, release it, record the
//! session), a hold the lock keeps alive itself (`kept.rs`), and the
//! random future drops that test cancellation (`cancel.rs`).
//!
//! May import: the [`Locker`](crate::Locker) (`locker.rs`), the workload's
//! settings (`workload_config.rs`), the [`ProtectedStore`](crate::ProtectedStore)
//! and `evidence`. Must never import `workload.rs` (it starts the clients)
//! or the torture run.

mod cancel;
mod client;
mod kept;

pub(crate) use client::Client;
