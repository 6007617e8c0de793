//! [`Hold`]: what `exec` can run a command under. A plain lock, a semaphore
//! permit (`exec -n K`) and a leadership (`elect`) all go through the one
//! run path in `exec.rs` (guard, stop before the lease ends, release).
//!
//! The library gives every held type the same methods (its `held_methods!`
//! macro) but no trait over them, so this is the CLI's: one line per method,
//! written once by `hold!` below.

use redquorum::{Error, FenceToken, Leadership, LeaseWatch, Lock, Permit};

/// A held lease that a command can run under.
pub(crate) trait Hold: Sized {
    /// The resource, semaphore or election name.
    fn resource(&self) -> &str;

    /// The lease: its deadline, and the at-risk signal to stop the command on.
    fn lease(&self) -> LeaseWatch;

    /// Starts the watchdog (a no-op if it runs already).
    fn auto_extend(&mut self);

    /// The owner token, as `redquorum status` names the holder.
    fn owner(&self) -> String;

    /// The fencing token (a leadership's epoch), written back to a quorum.
    async fn fence(&self) -> Result<FenceToken, Error>;

    /// Stops the watchdog, then releases on every node.
    async fn release(self) -> Result<usize, Error>;

    /// Stops the watchdog and leaves the keys to expire with their TTL.
    fn forget(self);

    /// Resolves when someone asks the holder to let go (never, for a kind
    /// that cannot be asked).
    async fn release_asked(&self);

    /// Variables the command sees besides `REDQUORUM_RESOURCE`,
    /// `REDQUORUM_OWNER` and `REDQUORUM_FENCE`.
    fn extra_env(&self) -> Vec<(&'static str, String)>;
}

/// `impl Hold` for a library type with the `held_methods!` methods; the
/// optional closure gives the extra environment.
macro_rules! hold {
    ($ty:ident) => {
        hold!($ty, |_: &$ty| Vec::new());
    };
    ($ty:ident, $extra_env:expr) => {
        hold!($ty, $extra_env, |_: &$ty| std::future::pending());
    };
    ($ty:ident, $extra_env:expr, $asked:expr) => {
        impl Hold for $ty {
            fn resource(&self) -> &str {
                $ty::resource(self)
            }

            fn lease(&self) -> LeaseWatch {
                $ty::lease(self)
            }

            fn auto_extend(&mut self) {
                $ty::auto_extend(self);
            }

            fn owner(&self) -> String {
                $ty::owner(self).to_string()
            }

            async fn fence(&self) -> Result<FenceToken, Error> {
                $ty::fence(self).await
            }

            async fn release(self) -> Result<usize, Error> {
                $ty::release(self).await
            }

            fn forget(self) {
                $ty::forget(self);
            }

            fn extra_env(&self) -> Vec<(&'static str, String)> {
                let extra_env: fn(&$ty) -> Vec<(&'static str, String)> = $extra_env;
                extra_env(self)
            }

            async fn release_asked(&self) {
                ($asked)(self).await
            }
        }
    };
}

// Only a lock can be asked to let go (`Lock::release_asked`).
hold!(Lock, |_: &Lock| Vec::new(), Lock::release_asked);
// The slot tells commands sharing a semaphore apart (0..K): a work queue
// shard, a port offset.
hold!(Permit, |permit: &Permit| vec![(
    "REDQUORUM_SLOT",
    permit.slot().to_string()
)]);
// A leadership's fencing token is its epoch (`Leadership::epoch` is `fence`).
hold!(Leadership);
