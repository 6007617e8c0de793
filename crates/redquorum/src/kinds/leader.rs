//! [`Leader`]: who leads an election, as a quorum of nodes sees it (read
//! from an inspection of the election's lock).

use crate::admin::inspect::Inspection;
use crate::error::Error;
use crate::node_error::NodeError;
use crate::outcome::{NodeOutcome, Outcomes};
use crate::protocol::fence::FenceToken;
use crate::protocol::owner_info::OwnerInfo;

/// Who leads, as a quorum of nodes sees it.
///
/// # Examples
///
/// ```no_run
/// # fn demo(leader: &redquorum::Leader) {
/// println!("{} leads (on {:?})", leader.value(), leader.info().map(|i| i.host()));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    token: String,
    info: Option<OwnerInfo>,
    epoch: Option<FenceToken>,
}

impl Leader {
    /// The value the leader proclaimed (`""` if it could not be read).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(leader: &redquorum::Leader) {
    /// println!("send writes to {}", leader.value());
    /// # }
    /// ```
    #[must_use]
    pub fn value(&self) -> &str {
        self.info.as_ref().map_or("", OwnerInfo::note)
    }

    /// The leadership's token (its [`Leadership::owner`](crate::Leadership::owner)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(leader: &redquorum::Leader) {
    /// println!("{}", leader.token());
    /// # }
    /// ```
    #[must_use]
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The leader's host and process id, and its value as the note.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(leader: &redquorum::Leader) {
    /// if let Some(info) = leader.info() { println!("{info}"); }
    /// # }
    /// ```
    #[must_use]
    pub fn info(&self) -> Option<&OwnerInfo> {
        self.info.as_ref()
    }

    /// The leader's epoch, the fencing token its writes carry
    /// ([`Leadership::epoch`](crate::Leadership::epoch)), once it has
    /// taken it (`None` before): an observer can fence with it too, e.g.
    /// refuse requests stamped with an older epoch. It is above every
    /// earlier leader's epoch.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let election = redlock.election("writer")?;
    /// let leadership = election.campaign("10.0.0.7:5432").await?;
    /// let epoch = leadership.epoch().await?;
    /// let leader = election.leader().await?.expect("a leader");
    /// assert_eq!(leader.epoch(), Some(epoch));
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn epoch(&self) -> Option<FenceToken> {
        self.epoch
    }
}

/// The leader a quorum of readable nodes recognises, with the value most of
/// them store; an error when fewer than a quorum could be read.
pub(crate) fn leader_of(inspection: &Inspection, quorum: usize) -> Result<Option<Leader>, Error> {
    let read = inspection.nodes().filter(|(_, view)| view.is_ok()).count();
    if read < quorum {
        let entries = inspection
            .nodes()
            .map(|(node, view)| {
                let outcome = match view {
                    Ok(_) => NodeOutcome::Acquired,
                    Err(error) => NodeOutcome::Failed(NodeError::new(
                        error.node().clone(),
                        error.source_error().clone(),
                    )),
                };
                (node.clone(), outcome)
            })
            .collect();
        return Err(Error::Unavailable {
            resource: inspection.resource().to_owned(),
            outcomes: Outcomes::of_read(entries, quorum),
        });
    }
    let Some((_, token)) = inspection
        .holders(quorum)
        .into_iter()
        .find(|(kind, _)| kind == "leader")
    else {
        return Ok(None);
    };
    let mut values: Vec<(Option<OwnerInfo>, usize)> = Vec::new();
    // The epoch was committed to a quorum: any of them has it.
    let mut epoch = None;
    let views = inspection.nodes().filter_map(|(_, view)| view.ok());
    for hold in views
        .flat_map(|view| view.holds())
        .filter(|h| h.token() == token)
    {
        epoch = epoch.max(hold.fence());
        let info = hold.owner_info().cloned();
        match values.iter_mut().find(|(seen, _)| *seen == info) {
            Some((_, count)) => *count += 1,
            None => values.push((info, 1)),
        }
    }
    let info = values
        .into_iter()
        .max_by_key(|(_, count)| *count)
        .and_then(|(info, _)| info);
    Ok(Some(Leader { token, info, epoch }))
}
