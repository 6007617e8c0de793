//! Who may hold a lock key at once: how a kind's blocking acquire waits
//! (wait/retry.rs takes it as two flags; `wait/` may not import this layer).

/// Who may hold a lock key at once, as its blocking acquire sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holders {
    /// One hold at a time (the plain, write and any-of lock, a set of one,
    /// a leadership): waiters take turns, and the first attempts of
    /// callers starting together go one at a time (wait/first_try.rs).
    One,
    /// Several holds may be live, but waiters take turns (a semaphore's
    /// permits; a reentrant owner's holds, which its next acquire joins).
    Several,
    /// Holds share (readers): every release wakes every waiter. (A wait
    /// on several keys, `lock_any` / `lock_all` over several names,
    /// listens so too, whatever its holders.)
    Shared,
}

impl Holders {
    /// Whether waiters take turns (only the head of the line contends).
    pub(crate) fn take_turns(self) -> bool {
        self != Holders::Shared
    }

    /// Whether a hold won in this process stands in the way of every
    /// other caller of it (wait/first_try.rs).
    pub(crate) fn one_holder(self) -> bool {
        self == Holders::One
    }
}
