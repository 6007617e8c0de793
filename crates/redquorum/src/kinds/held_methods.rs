//! The methods every held lock type has, written once: `held_methods!(Type)`
//! gives a type that wraps a `held: Held` (lease/held.rs) its public API, each
//! method a one-line call into the lease core, documented per type.

/// Implements the shared public API and `Debug` for a `struct $ty { held: Held }`.
macro_rules! held_methods {
    ($ty:ident) => {
        impl $ty {
            /// The resource name, as given when locking.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// println!("holding {}", lock.resource());
            /// # }
            /// ```
            #[must_use]
            pub fn resource(&self) -> &str {
                self.held.resource()
            }

            /// The Redis key holding this resource's lock on each node (the
            /// same key for every lock kind: see `docs/safety.md`).
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// println!("{}", lock.key()); // lock:{orders:42}
            /// # }
            /// ```
            #[must_use]
            pub fn key(&self) -> &str {
                self.held.key()
            }

            /// The random token of this hold, stored on each node.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// println!("owner {}", lock.owner());
            /// # }
            /// ```
            #[must_use]
            pub fn owner(&self) -> crate::protocol::token::OwnerToken {
                self.held.owner()
            }

            /// The lease each node grants (and each `extend` renews).
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// assert!(lock.validity() <= lock.ttl());
            /// # }
            /// ```
            #[must_use]
            pub fn ttl(&self) -> std::time::Duration {
                self.held.ttl()
            }

            /// The instant by which the holder must stop using the lock:
            /// after it, another holder may be granted.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(lock: redquorum::", stringify!($ty), ") {")]
            /// tokio::time::sleep_until(lock.deadline().into()).await; // the lease is over
            /// # }
            /// ```
            #[must_use]
            pub fn deadline(&self) -> std::time::Instant {
                self.held.deadline()
            }

            /// The nodes whose votes granted this hold, in the order the
            /// nodes were given: a quorum of them, at least. Nodes whose
            /// answer came after the decision, or whose vote was refused (a
            /// replica, a node restarted too recently), are not among them.
            /// An extension renews the hold wherever it still is, so this
            /// says where it was granted, not where it is now.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// for node in lock.granted_by() {
            ///     println!("granted by {node}");
            /// }
            /// # }
            /// ```
            #[must_use]
            pub fn granted_by(&self) -> Vec<crate::node_id::NodeId> {
                self.held.granted_by()
            }

            /// Time left before the deadline (zero once passed, or once the
            /// lease was declared lost).
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// if lock.validity() < std::time::Duration::from_millis(100) { /* stop soon */ }
            /// # }
            /// ```
            #[must_use]
            pub fn validity(&self) -> std::time::Duration {
                self.held.validity()
            }

            /// True while the deadline has not passed and the lease was not declared lost.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// assert!(lock.is_valid());
            /// # }
            /// ```
            #[must_use]
            pub fn is_valid(&self) -> bool {
                self.held.is_valid()
            }

            /// Renews the lease on a quorum (owner-checked) and returns the
            /// new validity. On failure the old deadline stands.
            ///
            /// # Errors
            ///
            /// - [`Error::NotHeld`](crate::Error::NotHeld): our hold is gone
            ///   (expired, or taken over) on too many nodes; the lease is
            ///   declared lost.
            /// - [`Error::Unavailable`](crate::Error::Unavailable): too few nodes answered.
            /// - [`Error::Expired`](crate::Error::Expired): a quorum answered, too late.
            /// - [`Error::Lost`](crate::Error::Lost): the lease was already
            ///   lost (its deadline passed, or it was declared lost): loss is
            ///   final, nothing is sent.
            ///
            /// # Cancel safety
            ///
            /// Cancel safe: dropped, it leaves the hold as it was, or extended
            /// on some nodes, which only keeps our own hold alive longer there.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(mut lock: redquorum::", stringify!($ty), ") -> Result<(), redquorum::Error> {")]
            /// let validity = lock.extend().await?;
            /// println!("{validity:?} more");
            /// # Ok(()) }
            /// ```
            pub async fn extend(&mut self) -> Result<std::time::Duration, crate::error::Error> {
                self.held.extend().await
            }

            /// Starts the watchdog: a background task that extends the lease
            /// when `extend_before` is left (a third of the TTL by default,
            /// see [`WatchdogOptions`](crate::WatchdogOptions)), until the
            /// lock is released, forgotten, dropped or lost. A failed
            /// extension is retried with doubling pauses while validity
            /// remains; the lease is at risk once less than the stop margin
            /// is left, and lost when an extension is refused, the validity
            /// runs out, or a limit is reached. Calling it again while the
            /// watchdog runs does nothing.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(mut lock: redquorum::", stringify!($ty), ") -> Result<(), redquorum::Error> {")]
            /// lock.auto_extend();
            /// assert!(lock.lease().is_auto_extending());
            /// lock.release().await?; // stops the watchdog first
            /// # Ok(()) }
            /// ```
            pub fn auto_extend(&mut self) {
                self.held.auto_extend();
            }

            /// A cheap, cloneable view of the lease: its deadline as the
            /// watchdog moves it, and the [`at_risk`](crate::LeaseWatch::at_risk)
            /// and [`lost`](crate::LeaseWatch::lost) signals.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: &redquorum::", stringify!($ty), ") {")]
            /// let lease = lock.lease();
            /// tokio::spawn(async move {
            ///     let risk = lease.at_risk().await;
            ///     eprintln!("stop using {} now: {risk}", lease.resource());
            /// });
            /// # }
            /// ```
            #[must_use]
            pub fn lease(&self) -> crate::lease::watch::LeaseWatch {
                self.held.lease()
            }

            /// Resolves when the lease is lost, with the reason; see
            /// [`LeaseWatch::lost`](crate::LeaseWatch::lost).
            ///
            /// # Cancel safety
            ///
            /// Cancel safe: it only observes.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(mut lock: redquorum::", stringify!($ty), ") -> Result<(), redquorum::Error> {")]
            /// lock.auto_extend();
            /// tokio::select! {
            ///     reason = lock.lost() => eprintln!("lost: {reason}"),
            ///     () = tokio::time::sleep(std::time::Duration::from_millis(50)) => { /* the work */ }
            /// }
            /// lock.release().await?;
            /// # Ok(()) }
            /// ```
            pub fn lost(
                &self,
            ) -> impl std::future::Future<Output = crate::lease::state::LostReason> + Send + 'static + use<> {
                self.held.lease().lost()
            }

            /// The fencing token of this hold: greater than the token of
            /// every conflicting hold granted before this one was asked for.
            /// Send it with every write to the protected resource, and have
            /// the resource refuse lower tokens (docs/fencing.md).
            ///
            /// The first call writes the token back to a quorum, only where
            /// this hold is still live (one concurrent round trip); later
            /// calls return the same token at once, while the lease is valid.
            /// A lock whose token is never asked for costs nothing more.
            ///
            /// # Errors
            ///
            /// - [`Error::FencingOff`](crate::Error::FencingOff): taken with
            ///   [`LockOptions::fencing`](crate::LockOptions::fencing) off.
            /// - [`Error::Lost`](crate::Error::Lost): the lease is over, or
            ///   our hold is gone on a quorum: no token for a stale holder.
            /// - [`Error::FenceUnavailable`](crate::Error::FenceUnavailable):
            ///   too few nodes took the write-back (or a fence counter is
            ///   corrupt); try again.
            ///
            /// # Cancel safety
            ///
            /// Cancel safe: a write-back cut short only raised some
            /// counters, which may run ahead, never behind.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(lock: redquorum::", stringify!($ty), ") -> Result<(), redquorum::Error> {")]
            /// let fence = lock.fence().await?;
            /// println!("UPDATE accounts SET balance = 10, fence = {fence} WHERE id = 7 AND fence <= {fence}");
            /// # Ok(()) }
            /// ```
            pub async fn fence(&self) -> Result<crate::protocol::fence::FenceToken, crate::error::Error> {
                self.held.fence().await
            }

            /// Releases on every node (owner-checked); returns on how many
            /// nodes our hold was removed by the time it returned. It returns
            /// as soon as a quorum confirmed the release (at least a quorum,
            /// then); the other nodes' releases complete in the background,
            /// and a node known to be down is not waited for. Stops the
            /// watchdog first (awaiting any extension in flight), so no
            /// extension follows it.
            ///
            /// # Errors
            ///
            /// - [`Error::NotHeld`](crate::Error::NotHeld): no node still had
            ///   our hold and a quorum said so (the lease had expired).
            /// - [`Error::Unavailable`](crate::Error::Unavailable): no node
            ///   released and too few answered; the hold expires with its TTL.
            ///
            /// # Cancel safety
            ///
            /// Cancel safe: dropped mid-way, the lock's `Drop` sends the
            /// release again in the background (it is idempotent).
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(lock: redquorum::", stringify!($ty), ") -> Result<(), redquorum::Error> {")]
            /// let released_on = lock.release().await?;
            /// println!("released on {released_on} nodes");
            /// # Ok(()) }
            /// ```
            pub async fn release(mut self) -> Result<usize, crate::error::Error> {
                self.held.release().await
            }

            /// Gives up the lock without releasing it: the hold expires with
            /// its TTL. The watchdog, if running, stops (after any extension
            /// in flight), so the lease ends at the current deadline.
            ///
            /// # Examples
            ///
            /// ```no_run
            #[doc = concat!("# fn demo(lock: redquorum::", stringify!($ty), ") {")]
            /// lock.forget();
            /// # }
            /// ```
            pub fn forget(mut self) {
                self.held.forget();
            }
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("resource", &self.held.resource())
                    .field("owner", &self.held.owner())
                    .field("ttl", &self.held.ttl())
                    .field("validity", &self.held.validity())
                    .finish()
            }
        }
    };
}
pub(crate) use held_methods;
