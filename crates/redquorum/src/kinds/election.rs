//! Leader election: one leader of a name at a time, with a value (a host
//! name, an address) that observers read, and an epoch that fences.
//!
//! The leadership is a hold of kind `leader` on the name's lock: exclusive
//! like a plain lock, extended by the watchdog from the moment it is won,
//! with `lost()` and the at-risk signal of any lease. Its value is stored as
//! the hold's owner information (changed with [`Leadership::proclaim`],
//! owner-checked on a quorum), and its fencing token is the epoch: every
//! later leader's epoch is greater, so a deposed leader's writes can be
//! refused by anything that checks it. A new leader, a new value and a
//! resignation are announced on the name's channel, so observers wake at
//! once; a leadership that expired is seen at the next poll (a tenth of the
//! TTL).

use std::time::{Duration, Instant};

use futures::Stream;

use crate::error::Error;
use crate::kinds::leader::{Leader, leader_of};
use crate::kinds::leadership::Leadership;
use crate::protocol::claim::Kind;
use crate::protocol::keys;
use crate::protocol::owner_info::OwnerInfo;
use crate::redlock::{Holders, Redlock};

/// The election of one name.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let election = redlock.election("scheduler")?;
/// let leadership = election.campaign("10.0.0.7:8080").await?;
/// let leader = election.leader().await?.expect("someone leads");
/// assert_eq!(leader.value(), "10.0.0.7:8080");
/// let epoch = leadership.epoch().await?; // fences the leader's writes
/// # let _ = epoch;
/// leadership.resign().await?;
/// assert!(election.leader().await?.is_none());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Election {
    redlock: Redlock,
    name: String,
}

impl Redlock {
    /// The election of `name`. Its leadership is the name's lock: a plain
    /// or other lock on the same name excludes a leader, and the reverse.
    ///
    /// # Errors
    ///
    /// [`Error::EmptyResource`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert_eq!(redlock.election("primary")?.name(), "primary");
    /// # Ok(()) }
    /// ```
    pub fn election(&self, name: &str) -> Result<Election, Error> {
        if name.is_empty() {
            return Err(Error::EmptyResource);
        }
        Ok(Election {
            redlock: self.clone(),
            name: name.to_owned(),
        })
    }
}

impl Election {
    /// The election's name.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(election: &redquorum::Election) {
    /// println!("{}", election.name());
    /// # }
    /// ```
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One attempt to become leader with `value`; the leadership is
    /// auto-extended from the start.
    ///
    /// # Errors
    ///
    /// As [`Redlock::try_lock`]: [`Error::Contended`] while another leads.
    ///
    /// # Cancel safety
    ///
    /// As [`Redlock::try_lock`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let election = redlock.election("indexer")?;
    /// let first = election.try_campaign("a").await?;
    /// assert!(election.try_campaign("b").await.is_err());
    /// # drop(first);
    /// # Ok(()) }
    /// ```
    pub async fn try_campaign(&self, value: &str) -> Result<Leadership, Error> {
        let info = OwnerInfo::here(value).encode();
        let claim = self
            .redlock
            .claim(Kind::Leader, &self.name)?
            .with_meta(&info);
        let mut held = self.redlock.take(claim).await?;
        held.auto_extend();
        Ok(Leadership::new(held))
    }

    /// Waits to become leader with `value`, as long as it takes (the
    /// handle's `wait` does not end a campaign: drop the future to stop
    /// campaigning). Woken by the leader's resignation.
    ///
    /// # Errors
    ///
    /// Only errors no retry can cure ([`Error::Shutdown`]); contention and
    /// unavailable nodes are waited out.
    ///
    /// # Cancel safety
    ///
    /// As [`Redlock::lock`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let leadership = redlock.election("billing")?.campaign("worker-1").await?;
    /// // ... lead until leadership.lease().lost() ...
    /// leadership.resign().await?;
    /// # Ok(()) }
    /// ```
    pub async fn campaign(&self, value: &str) -> Result<Leadership, Error> {
        loop {
            match self.campaign_waiting(value).await {
                Err(Error::WaitTimeout { .. }) => continue,
                other => return other,
            }
        }
    }

    /// Campaigns as [`campaign`](Self::campaign) does (woken by the
    /// leader's resignation, through contention and outages), but for at
    /// most the handle's [`wait`](crate::LockOptions::wait).
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] when the wait ran out, with the last attempt's
    /// error: [`Error::Contended`] while another leads,
    /// [`Error::Unavailable`] when too few nodes took the vote (down,
    /// unreachable, or refusing writes, e.g. out of memory). Errors no retry
    /// can cure ([`Error::Shutdown`]) at once.
    ///
    /// # Cancel safety
    ///
    /// As [`Redlock::lock`].
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use std::time::Duration;
    /// use redquorum::{Error, LockOptions, Redlock};
    ///
    /// let redlock = Redlock::builder().nodes(cluster.urls()).build()?;
    /// let brief = redlock.with_options(&LockOptions { wait: Duration::from_millis(200), ..*redlock.options() })?;
    /// let election = brief.election("reports")?;
    /// let leader = election.campaign_waiting("a").await?;
    /// let late = election.campaign_waiting("b").await;
    /// assert!(matches!(late, Err(Error::WaitTimeout { ref last, .. }) if matches!(**last, Error::Contended { .. })));
    /// # drop(leader);
    /// # Ok(()) }
    /// ```
    pub async fn campaign_waiting(&self, value: &str) -> Result<Leadership, Error> {
        self.redlock
            .waiting(&self.name, Holders::One, || self.try_campaign(value))
            .await
    }

    /// Who leads now, as a quorum of nodes sees it; `None` when no one does.
    /// One read of every node; takes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::Unavailable`] when fewer than a quorum of nodes could be
    /// read (no answer then would be a guess).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// assert!(redlock.election("nobody")?.leader().await?.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn leader(&self) -> Result<Option<Leader>, Error> {
        let inspection = self.redlock.inspect(&self.name).await?;
        leader_of(&inspection, self.redlock.quorum())
    }

    /// A stream of who leads: the current leader (or `None`) first, then
    /// each change (a new leader, a new value, no leader). Woken by the
    /// announcements of the name's lock, and polled every tenth of the TTL
    /// for leaderships that expired. A read that fails is yielded as an
    /// error and the stream goes on.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// use futures::StreamExt;
    ///
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let election = redlock.election("router")?;
    /// let mut leaders = std::pin::pin!(election.observe());
    /// assert_eq!(leaders.next().await.unwrap()?, None);
    /// let leadership = election.campaign("10.0.0.9").await?;
    /// assert_eq!(leaders.next().await.unwrap()?.unwrap().value(), "10.0.0.9");
    /// leadership.proclaim("10.0.0.10").await?;
    /// assert_eq!(leaders.next().await.unwrap()?.unwrap().value(), "10.0.0.10");
    /// # Ok(()) }
    /// ```
    pub fn observe(
        &self,
    ) -> impl Stream<Item = Result<Option<Leader>, Error>> + Send + 'static + use<> {
        let election = self.clone();
        let key = election.redlock.key(&election.name);
        let news = keys::news(&key);
        let interval = (election.redlock.options().ttl / 10).max(Duration::from_millis(10));
        // The stream's waiter never times out: it is a subscription.
        let forever = Instant::now() + Duration::from_secs(100 * 365 * 86_400);
        futures::stream::unfold(
            (election, None::<Option<Leader>>, None),
            move |(election, last, waiter)| {
                let (key, news) = (key.clone(), news.clone());
                async move {
                    // Releases (a resignation, a force-release) and news (a
                    // new leader, a new value) both wake it.
                    let mut waiter = match waiter {
                        Some(waiter) => waiter,
                        None => {
                            let notifier = election.redlock.notifier();
                            notifier.waiter(&[&key, &news], false, forever).await
                        }
                    };
                    let mut first = last.is_none();
                    loop {
                        if !first {
                            waiter.wait(interval, forever).await;
                        }
                        first = false;
                        match election.leader().await {
                            Err(error) => {
                                return Some((Err(error), (election, last, Some(waiter))));
                            }
                            Ok(now) if last.as_ref() != Some(&now) => {
                                let state = (election, Some(now.clone()), Some(waiter));
                                return Some((Ok(now), state));
                            }
                            Ok(_) => {}
                        }
                    }
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::kinds::assert_send;

    #[allow(dead_code)]
    fn futures_are_send(
        election: super::Election,
        leadership: crate::kinds::leadership::Leadership,
    ) {
        assert_send(&election.campaign("v"));
        assert_send(&election.observe());
        assert_send(&leadership.proclaim("v"));
    }
}
