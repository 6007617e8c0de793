//! The holds this process has, so that [`Redlock::shutdown`](crate::Redlock::shutdown)
//! can release every one of them before the process exits (a dropped hold
//! is only released in the background, which a returning `main` cuts short).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::lease::state::Lease;
use crate::protocol::claim::Claim;
use crate::sync::lock;

/// A live hold: what it claims, and its lease (declared lost at shutdown).
pub(crate) type Hold = (Arc<Claim>, Arc<Lease>);

/// Live holds by registration number, each with when it was granted (the
/// held-locks gauge and hold-time histogram are kept here, where every hold
/// starts and ends).
#[derive(Debug, Default)]
pub(crate) struct Registry {
    next: AtomicU64,
    holds: Mutex<HashMap<u64, (Hold, Instant)>>,
}

impl Registry {
    /// Records a live hold; returns its registration number.
    pub(crate) fn add(&self, claim: Arc<Claim>, lease: Arc<Lease>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let started = crate::metrics::hold_started(claim.kind.name());
        lock(&self.holds).insert(id, ((claim, lease), started));
        id
    }

    /// The hold was released, forgotten or dropped.
    pub(crate) fn remove(&self, id: u64) {
        let removed = lock(&self.holds).remove(&id);
        if let Some(((claim, _), started)) = removed {
            crate::metrics::hold_ended(claim.kind.name(), started);
        }
    }

    /// The holds of `owner` (a lease ticket's, just adopted) are lost:
    /// the lock moved. They stay registered until their handles go.
    pub(crate) fn moved(&self, owner: crate::protocol::token::OwnerToken) {
        for ((claim, lease), _) in lock(&self.holds).values() {
            if claim.token == owner {
                lease.declare_lost(crate::lease::state::LostReason::Moved);
            }
        }
    }

    /// Every live hold, leaving none registered.
    pub(crate) fn take_all(&self) -> Vec<Hold> {
        let holds: Vec<(Hold, Instant)> = lock(&self.holds).drain().map(|(_, hold)| hold).collect();
        holds
            .into_iter()
            .map(|(hold, started)| {
                crate::metrics::hold_ended(hold.0.kind.name(), started);
                hold
            })
            .collect()
    }
}
