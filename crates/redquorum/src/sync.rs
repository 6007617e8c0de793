//! Locking the crate's std mutexes.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, ignoring poisoning: every mutex in this crate guards plain
/// data that is consistent at each unlock (no code panics halfway through
/// an update), so a panic elsewhere leaves nothing half-written.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
