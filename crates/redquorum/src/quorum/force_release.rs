//! An operator's force-release, in three rounds: read what every node has
//! on the resource (its holds, a waiting writer's intent, a lock-delay),
//! remove exactly that on every node, then store the highest fence
//! proposal on a quorum.
//!
//! Why not one round that deletes whatever is there: a node that is away
//! (partitioned, stalled) is still sent the removal, and it lands when the
//! node comes back, maybe after the call failed and a new holder took the
//! resource; a blind delete would then oust that holder on the nodes it
//! lands on, and a rival could take the resource beside it. Removing only
//! what the first round found cannot touch a hold taken after it.

use std::collections::BTreeSet;

use fred::types::Value;

use crate::error::Error;
use crate::node_error::NodeError;
use crate::node_id::NodeId;
use crate::outcome::{NodeOutcome, Outcomes};
use crate::protocol::keys::ResourceKeys;
use crate::protocol::resource_ops;
use crate::quorum::coordinator::Quorum;
use crate::quorum::fan_out::{self, Until};
use crate::quorum::tally::Decision;

impl Quorum {
    /// Force-releases `resource` (`keys`): what any node reports on it (a
    /// quorum must answer that read) is removed on every node, then the
    /// highest fence proposal is written back to a quorum, so that every
    /// later holder's token is above the one returned.
    pub(crate) async fn force_release(
        &self,
        resource: &str,
        keys: &ResourceKeys,
    ) -> Result<i64, Error> {
        self.check_open()?;
        self.nodes.first_connect().await;
        let found = self.force_read(resource, keys).await?;
        let op = resource_ops::force_release(keys, &found);
        let (decision, votes) = fan_out::gather(&self.nodes, || op.clone(), Until::Everyone).await;
        let unavailable = |votes| Error::Unavailable {
            resource: resource.to_owned(),
            outcomes: self.settling().outcomes(votes),
        };
        if decision != Decision::Won {
            return Err(unavailable(votes));
        }
        let highest = votes.iter().map(|v| v.value).max().unwrap_or(0);
        let raise = resource_ops::raise_fence(keys, highest);
        match fan_out::gather(&self.nodes, || raise.clone(), Until::Decided).await {
            (Decision::Won, _) => Ok(highest),
            (_, votes) => Err(unavailable(votes)),
        }
    }

    /// The first round: every entry any node reports on `resource`, once a
    /// quorum of nodes answered (fewer could miss a holder).
    async fn force_read(&self, resource: &str, keys: &ResourceKeys) -> Result<Vec<String>, Error> {
        let answers = self.read_all(resource_ops::force_read(keys)).await;
        let mut found = BTreeSet::new();
        let mut entries = Vec::new();
        for (node, answer) in answers {
            let outcome = match answer.and_then(|value| entries_of(value, &node)) {
                Ok(entries) => {
                    found.extend(entries);
                    NodeOutcome::Acquired
                }
                Err(error) => NodeOutcome::Failed(error),
            };
            entries.push((node, outcome));
        }
        let quorum = self.quorum();
        if entries.iter().filter(|(_, o)| o.is_acquired()).count() < quorum {
            return Err(Error::Unavailable {
                resource: resource.to_owned(),
                outcomes: Outcomes::of_read(entries, quorum),
            });
        }
        Ok(found.into_iter().collect())
    }
}

/// A first-round answer: an array of strings.
fn entries_of(value: Value, node: &NodeId) -> Result<Vec<String>, NodeError> {
    let shape = || {
        let error = fred::error::Error::new(
            fred::error::ErrorKind::Protocol,
            "the force-release's read answered another shape",
        );
        NodeError::new(node.clone(), error)
    };
    let Value::Array(items) = value else {
        return Err(shape());
    };
    items
        .into_iter()
        .map(|item| item.into_string().ok_or_else(shape))
        .collect()
}
