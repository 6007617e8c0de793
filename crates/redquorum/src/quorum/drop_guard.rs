//! One generic drop guard: runs its action when dropped, unless disarmed.
//! Cancel safety for every async operation that leaves something behind if
//! its future is dropped half-way (an acquisition's unwind, a waiting
//! writer's intent).

/// Runs `F` on drop unless [`disarm`](DropGuard::disarm)ed.
#[derive(Debug)]
pub(crate) struct DropGuard<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> DropGuard<F> {
    pub(crate) fn new(action: F) -> Self {
        Self(Some(action))
    }

    /// The work finished: nothing to do on drop.
    pub(crate) fn disarm(mut self) {
        self.0 = None;
    }
}

impl<F: FnOnce()> Drop for DropGuard<F> {
    fn drop(&mut self) {
        if let Some(action) = self.0.take() {
            action();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn runs_on_drop_unless_disarmed() {
        let ran = Cell::new(0);
        drop(DropGuard::new(|| ran.set(ran.get() + 1)));
        assert_eq!(ran.get(), 1);
        DropGuard::new(|| ran.set(ran.get() + 1)).disarm();
        assert_eq!(ran.get(), 1);
    }
}
