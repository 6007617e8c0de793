//! [`Grant`]: a granted lock as a workload sees it ([`Locker::acquire`](crate::Locker::acquire)(crate::Locker::acquire)).

use std::time::Instant;

use crate::evidence::Share;

/// A granted lock, as a workload sees it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Grant<H> {
    /// The lock value, handed back to [`Locker::release`](crate::Locker::release).
    pub held: H,
    /// The owner token, for the history.
    pub owner: String,
    /// The fencing token, when the driver asked for one.
    pub fence: Option<u64>,
    /// When the holder must stop using the lock.
    pub deadline: Instant,
    /// The lock kind that granted it, for the history (empty: not said).
    pub kind: &'static str,
    /// How the hold may share its resource (`None`: exclusive). A sharing
    /// holder only reads the protected value.
    pub share: Option<Share>,
    /// The lock renews the hold by itself (a leadership's watchdog): its
    /// deadline moves without the holder's extensions, which the history
    /// alone records, so the checker does not call a late one a revival.
    pub renews_itself: bool,
    /// The holder never asked for a fencing token (most users: the plain
    /// lock's default), so it touches a fenced store only to read.
    pub tokenless: bool,
    /// The lock keeps this hold alive by its own renewal (a watchdog) while
    /// the holder works this long, whatever its holder kind (`Holder::Kept`):
    /// a long job, as such locks are used. The workload follows the
    /// deadline the renewal moves through [`Locker::deadline`](crate::Locker::deadline).
    pub kept: Option<std::time::Duration>,
    /// The other resources the hold covers, as the holder asked for them
    /// (an all-of set), so the checker judges it on each of them.
    pub also: Vec<String>,
    /// The nodes (by index, in the order the run gave them) whose votes
    /// the lock counted for this grant, when it says (empty: not said).
    /// The checker requires each of them to have stored the hold.
    pub voters: Vec<usize>,
}

impl<H> Grant<H> {
    /// A grant without a fencing token.
    ///
    /// # Examples
    ///
    /// ```
    /// let grant = redquorum_harness::Grant::new((), "owner".into(), std::time::Instant::now());
    /// assert!(grant.fence.is_none());
    /// ```
    pub fn new(held: H, owner: String, deadline: Instant) -> Self {
        Self {
            held,
            owner,
            fence: None,
            deadline,
            kind: "",
            share: None,
            renews_itself: false,
            tokenless: false,
            kept: None,
            also: Vec::new(),
            voters: Vec::new(),
        }
    }

    /// Says the hold covers these other resources too (see [`Grant::also`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let grant = redquorum_harness::Grant::new((), "o".into(), std::time::Instant::now())
    ///     .covering(vec!["b".into()]);
    /// assert_eq!(grant.also, ["b"]);
    /// ```
    #[must_use]
    pub fn covering(mut self, also: Vec<String>) -> Self {
        self.also = also;
        self
    }

    /// Says which nodes' votes the lock counted (see [`Grant::voters`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let grant = redquorum_harness::Grant::new((), "o".into(), std::time::Instant::now())
    ///     .voted_by(vec![0, 2, 4]);
    /// assert_eq!(grant.voters, [0, 2, 4]);
    /// ```
    #[must_use]
    pub fn voted_by(mut self, voters: Vec<usize>) -> Self {
        self.voters = voters;
        self
    }

    /// Adds the lock's fencing token, which the checker then requires to increase.
    ///
    /// # Examples
    ///
    /// ```
    /// let grant = redquorum_harness::Grant::new((), "o".into(), std::time::Instant::now()).with_fence(Some(9));
    /// assert_eq!(grant.fence, Some(9));
    /// ```
    #[must_use]
    pub fn with_fence(mut self, fence: Option<u64>) -> Self {
        self.fence = fence;
        self
    }

    /// Says which lock kind granted it and how its hold may share.
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_harness::{Grant, Share};
    /// let grant = Grant::new((), "o".into(), std::time::Instant::now()).with_kind("read", Some(Share::Readers));
    /// assert_eq!(grant.share, Some(Share::Readers));
    /// ```
    #[must_use]
    pub fn with_kind(mut self, kind: &'static str, share: Option<Share>) -> Self {
        self.kind = kind;
        self.share = share;
        self
    }

    /// Says the lock renews this hold by itself (see [`Grant::renews_itself`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let grant = redquorum_harness::Grant::new((), "o".into(), std::time::Instant::now()).renewing_itself();
    /// assert!(grant.renews_itself);
    /// ```
    #[must_use]
    pub fn renewing_itself(mut self) -> Self {
        self.renews_itself = true;
        self
    }
}

impl<H> Grant<H> {
    /// Says the lock keeps the hold alive by itself while its holder works
    /// `work` (see [`Grant::kept`]); it renews itself.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let grant = redquorum_harness::Grant::new((), "o".into(), Instant::now()).kept_alive(Duration::from_secs(3));
    /// assert!(grant.renews_itself && grant.kept == Some(Duration::from_secs(3)));
    /// ```
    #[must_use]
    pub fn kept_alive(mut self, work: std::time::Duration) -> Self {
        self.kept = Some(work);
        self.renewing_itself()
    }

    /// Says the holder never asked for a fencing token (see [`Grant::tokenless`]).
    ///
    /// # Examples
    ///
    /// ```
    /// let grant = redquorum_harness::Grant::new((), "o".into(), std::time::Instant::now()).without_token();
    /// assert!(grant.tokenless && grant.fence.is_none());
    /// ```
    #[must_use]
    pub fn without_token(mut self) -> Self {
        self.tokenless = true;
        self.fence = None;
        self
    }
}
