//! A held lock's life, whatever its kind: the hold a quorum granted
//! (`held.rs`: extend, release, the fencing token's write-back, release on
//! drop), its lease (`state.rs`: deadline, extensions, loss, at-risk) and
//! the holder's view of it ([`LeaseWatch`], `watch.rs`), the watchdog task
//! that extends it (`watchdog.rs`), the registry of live holds that
//! `Redlock::shutdown` releases (`registry.rs`), and the lease ticket a
//! hold is handed over with (`ticket.rs`).
//!
//! May import: `quorum/` (every extend, release and fencing round is one
//! coordinator call), `protocol/` (the claim, the tokens), and the root
//! vocabulary (errors, options, metrics, `sync`, `mutants`).
//!
//! Must never import: `redlock/`, `kinds/` (they wrap a hold, not the
//! other way round), `node/`, `wait/`.

pub(crate) mod held;
pub(crate) mod registry;
pub(crate) mod state;
pub(crate) mod ticket;
pub(crate) mod watch;
mod watchdog;

pub use state::{AtRisk, LostReason};
pub use ticket::{Ticket, TicketError};
pub use watch::LeaseWatch;
