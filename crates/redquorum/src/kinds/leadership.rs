//! Being the leader ([`Leadership`]): a leader-kind hold that the watchdog
//! extends, whose value observers read and whose fencing token is the
//! epoch (kinds/election.rs has how it is won).

use crate::error::Error;
use crate::kinds::held_methods::held_methods;
use crate::lease::held::Held;
use crate::protocol::fence::FenceToken;
use crate::protocol::owner_info::OwnerInfo;

/// Being the leader: a lease the watchdog extends until it is resigned,
/// dropped or lost (watch [`lease`](Self::lease)'s `lost()` and
/// `at_risk()`, and stop acting as leader by [`deadline`](Self::deadline)).
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let leadership = redlock.election("compactor")?.campaign("host-a").await?;
/// let lease = leadership.lease();
/// tokio::select! {
///     _ = lease.lost() => println!("no longer leader: stop"),
///     _ = tokio::time::sleep(std::time::Duration::from_millis(10)) => println!("led a while"),
/// }
/// leadership.resign().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a Leadership resigns at once"]
pub struct Leadership {
    held: Held,
}

held_methods!(Leadership);

impl Leadership {
    pub(crate) fn new(held: Held) -> Self {
        Self { held }
    }

    /// Changes the leader's value on a quorum, owner-checked; observers
    /// are woken.
    ///
    /// # Errors
    ///
    /// [`Error::Lost`] or [`Error::NotHeld`] when no longer leader (the
    /// lease is then lost), [`Error::Unavailable`] when too few nodes
    /// answered (the value may be new on some of them; try again).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let election = redlock.election("gateway")?;
    /// let leadership = election.campaign("starting").await?;
    /// leadership.proclaim("ready at 10.0.0.3:443").await?;
    /// assert_eq!(election.leader().await?.unwrap().value(), "ready at 10.0.0.3:443");
    /// # Ok(()) }
    /// ```
    pub async fn proclaim(&self, value: &str) -> Result<(), Error> {
        self.held.set_meta(&OwnerInfo::here(value).encode()).await
    }

    /// The leader's epoch: its fencing token, greater than every earlier
    /// leader's. Pass it with every write the leader makes.
    ///
    /// # Errors
    ///
    /// As [`Lock::fence`](crate::Lock::fence).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let election = redlock.election("writer")?;
    /// let first = election.campaign("a").await?.epoch().await?;
    /// let second = election.campaign("b").await?.epoch().await?; // the first resigned on drop
    /// assert!(second > first);
    /// # Ok(()) }
    /// ```
    pub async fn epoch(&self) -> Result<FenceToken, Error> {
        self.held.fence().await
    }

    /// Gives up the leadership (a release): observers and campaigners wake.
    ///
    /// # Errors
    ///
    /// As [`Lock::release`](crate::Lock::release).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let leadership = redlock.election("cron")?.campaign("me").await?;
    /// // It returns once a quorum (2 of 3) confirmed it; the rest follows.
    /// assert!(leadership.resign().await? >= 2);
    /// # Ok(()) }
    /// ```
    pub async fn resign(self) -> Result<usize, Error> {
        self.release().await
    }
}
