//! The holds this process has, so that [`Redlock::shutdown`](crate::Redlock::shutdown)
//! can release every one of them before the process exits (a dropped hold
//! is only released in the background, which a returning `main` cuts short).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::claim::Claim;
use crate::lease::Shared;
use crate::sync::lock;

/// A live hold: what it claims, and its lease (declared lost at shutdown).
pub(crate) type Hold = (Arc<Claim>, Arc<Shared>);

/// Live holds by registration number.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    next: AtomicU64,
    holds: Mutex<HashMap<u64, Hold>>,
}

impl Registry {
    /// Records a live hold; returns its registration number.
    pub(crate) fn add(&self, claim: Arc<Claim>, lease: Arc<Shared>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.holds).insert(id, (claim, lease));
        id
    }

    /// The hold was released, forgotten or dropped.
    pub(crate) fn remove(&self, id: u64) {
        lock(&self.holds).remove(&id);
    }

    /// Every live hold, leaving none registered.
    pub(crate) fn take_all(&self) -> Vec<Hold> {
        lock(&self.holds).drain().map(|(_, hold)| hold).collect()
    }
}
