//! The health columns of `redquorum status`: what each node is (role,
//! durability, eviction policy) and whether its votes count right now,
//! delayed-restart rule included.
//!
//! The rules live in the library: this builds a `Redlock` only to read its
//! own probes (`Redlock::health`), so `status` judges a node exactly as a
//! lock would. It never takes a lock.

use std::time::Duration;

use redquorum::{Durability, Ineligible, NodeHealth, Redlock, Role};

/// The lease TTL of the probing `Redlock` when no `--max-ttl` is given. It
/// takes no lock, so this only has to pass the builder's checks.
const PROBE_TTL: Duration = Duration::from_secs(3600);

/// One node's health, as `status` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Health {
    pub(crate) role: Role,
    pub(crate) durability: Durability,
    pub(crate) eviction_policy: Option<String>,
    pub(crate) uptime: Option<Duration>,
    /// Why the library would refuse this node's vote now, if it would.
    pub(crate) refusal: Option<Ineligible>,
}

impl From<&NodeHealth> for Health {
    fn from(health: &NodeHealth) -> Self {
        Self {
            role: health.role(),
            durability: health.durability(),
            eviction_policy: health.eviction_policy().map(str::to_owned),
            uptime: health.uptime(),
            refusal: health.refusal().cloned(),
        }
    }
}

/// Every node's health, in the order of `urls`, as judged by a `Redlock`
/// with `max_ttl` (the delayed-restart rule is off without it). An error
/// (said without any password) when no `Redlock` can be built on the nodes.
pub(crate) async fn probe(
    urls: &[String],
    node_timeout: Duration,
    max_ttl: Option<Duration>,
    key_prefix: &str,
) -> Result<Vec<Health>, String> {
    let mut builder = Redlock::builder()
        .nodes(urls)
        .ttl(max_ttl.unwrap_or(PROBE_TTL))
        .node_timeout(node_timeout)
        .key_prefix(key_prefix);
    if let Some(max_ttl) = max_ttl {
        builder = builder.max_ttl(max_ttl);
    }
    let redlock = builder.build().map_err(|e| e.to_string())?;
    // The first call waits for the connections and one probe of every node.
    let health = redlock.health().await;
    if health.len() != urls.len() {
        return Err(format!(
            "{} nodes probed for {} given",
            health.len(),
            urls.len()
        ));
    }
    Ok(health.iter().map(|(_, h)| Health::from(h)).collect())
}

/// Whether a node's vote counts, for the table and the JSON `vote` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vote {
    /// Reachable and its vote counts.
    Counts,
    /// Reachable, but the library refuses its vote.
    Refused,
    /// Not reachable: it cannot vote.
    Unreachable,
    /// Health could not be probed.
    Unknown,
}

impl Vote {
    pub(crate) fn of(reachable: bool, health: Option<&Health>) -> Self {
        match (reachable, health) {
            (false, _) => Self::Unreachable,
            (true, None) => Self::Unknown,
            (true, Some(h)) if h.refusal.is_some() => Self::Refused,
            (true, Some(_)) => Self::Counts,
        }
    }

    /// The JSON value.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Counts => "votes",
            Self::Refused => "refused",
            Self::Unreachable => "unreachable",
            Self::Unknown => "unknown",
        }
    }
}

/// The VOTES cell: `votes`, `refused: <why>`, `unreachable` or `unknown`.
pub(crate) fn vote_cell(vote: Vote, health: Option<&Health>) -> String {
    match (vote, health.and_then(|h| h.refusal.as_ref())) {
        (Vote::Refused, Some(reason)) => format!("refused: {}", short_reason(reason)),
        _ => vote.name().to_owned(),
    }
}

fn short_reason(reason: &Ineligible) -> String {
    match reason {
        Ineligible::RecentRestart { uptime, max_ttl } => format!(
            "restarted {}s ago, max ttl {}s",
            uptime.as_secs(),
            max_ttl.as_secs()
        ),
        Ineligible::Replica => "a replica".to_owned(),
        Ineligible::Unverified => "reconnected, not probed yet".to_owned(),
        other => other.to_string(),
    }
}

/// The JSON value of a durability.
pub(crate) fn durability_name(durability: Durability) -> &'static str {
    match durability {
        Durability::Fsync => "aof_always",
        Durability::NotDurable => "not_durable",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(refusal: Option<Ineligible>) -> Health {
        Health {
            role: Role::Master,
            durability: Durability::NotDurable,
            eviction_policy: Some("noeviction".to_owned()),
            uptime: Some(Duration::from_secs(2)),
            refusal,
        }
    }

    #[test]
    fn the_vote_follows_reachability_then_the_refusal() {
        let ok = health(None);
        let young = health(Some(Ineligible::RecentRestart {
            uptime: Duration::from_secs(2),
            max_ttl: Duration::from_secs(30),
        }));
        assert_eq!(Vote::of(false, Some(&ok)), Vote::Unreachable);
        assert_eq!(Vote::of(true, None), Vote::Unknown);
        assert_eq!(Vote::of(true, Some(&ok)), Vote::Counts);
        assert_eq!(Vote::of(true, Some(&young)), Vote::Refused);
        assert_eq!(vote_cell(Vote::Counts, Some(&ok)), "votes");
        assert_eq!(
            vote_cell(Vote::Refused, Some(&young)),
            "refused: restarted 2s ago, max ttl 30s"
        );
        assert_eq!(vote_cell(Vote::Unreachable, Some(&young)), "unreachable");
        let replica = health(Some(Ineligible::Replica));
        assert_eq!(
            vote_cell(Vote::Refused, Some(&replica)),
            "refused: a replica"
        );
    }

    #[test]
    fn durability_names_are_stable() {
        assert_eq!(durability_name(Durability::Fsync), "aof_always");
        assert_eq!(durability_name(Durability::NotDurable), "not_durable");
        assert_eq!(durability_name(Durability::Unknown), "unknown");
    }
}
