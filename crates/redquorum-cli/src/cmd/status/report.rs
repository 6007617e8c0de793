//! The report of `redquorum status`: what every node says, the holders a
//! quorum recognises, and the health columns, as a table or as JSON.

use std::time::Duration;

use comfy_table::{Table, presets::NOTHING};
use redquorum::{Durability, Ineligible, Inspection, NodeHealth, NodeId, Redlock};
use serde::Serialize;

/// How many hex digits of a token the table shows.
const SHORT_TOKEN: usize = 8;

/// Everything `status` found, in the shape of its JSON.
#[derive(Debug, Serialize)]
pub(super) struct Report {
    resource: String,
    key: String,
    fence_key: String,
    pub(super) quorum: usize,
    pub(super) reachable: usize,
    /// Whether a quorum recognises a holder.
    held: bool,
    /// The kind of the quorum's holders (`lock`, `write`, `read`, `reentrant`).
    kind: Option<String>,
    /// The tokens held on at least a quorum.
    holders: Vec<String>,
    /// On how many nodes the most widely held token is.
    held_on: usize,
    /// The delayed-restart rule's max TTL (`--max-ttl`), if checked.
    max_ttl_ms: Option<u128>,
    /// Nodes whose votes count now.
    voting: usize,
    nodes: Vec<NodeReport>,
}

/// One node's line.
#[derive(Debug, Serialize)]
struct NodeReport {
    node: String,
    reachable: bool,
    /// Why it could not be read: the node and the cause (never a password).
    error: Option<String>,
    kind: Option<String>,
    /// A lock-delay left after an unclean loss, in ms.
    blocked_ms: Option<u128>,
    holds: Vec<HoldReport>,
    /// A waiting writer's token.
    intent: Option<String>,
    fence: Option<u64>,
    pttl_ms: Option<u128>,
    role: String,
    durability: &'static str,
    eviction_policy: Option<String>,
    evicts_lock_keys: Option<bool>,
    uptime_s: Option<u64>,
    /// `votes`, `refused`, `unreachable`.
    vote: &'static str,
    /// Why the vote is refused, in full.
    refusal: Option<String>,
    /// The same, shortened for the table.
    #[serde(skip)]
    refusal_short: Option<String>,
}

#[derive(Debug, Serialize)]
struct HoldReport {
    token: String,
    ttl_ms: u128,
    /// Who took it (`host pid N: note`), when the holder said.
    owner: Option<String>,
}

impl Report {
    pub(super) fn new(
        redlock: &Redlock,
        inspection: &Inspection,
        health: &[(NodeId, NodeHealth)],
        max_ttl: Option<Duration>,
    ) -> Self {
        let quorum = redlock.quorum();
        let nodes: Vec<NodeReport> = inspection
            .nodes()
            .zip(health)
            .map(|((node, view), (_, health))| NodeReport::new(node, view, health))
            .collect();
        let holders = inspection.holders(quorum);
        let held_on = most_held(&nodes);
        Self {
            resource: inspection.resource().to_owned(),
            key: redlock.key(inspection.resource()),
            fence_key: redlock.fence_key(inspection.resource()),
            quorum,
            reachable: nodes.iter().filter(|n| n.reachable).count(),
            held: !holders.is_empty(),
            kind: holders.first().map(|(kind, _)| kind.clone()),
            holders: holders.into_iter().map(|(_, token)| token).collect(),
            held_on,
            max_ttl_ms: max_ttl.map(|m| m.as_millis()),
            voting: nodes.iter().filter(|n| n.vote == "votes").count(),
            nodes,
        }
    }

    pub(super) fn table(&self) -> String {
        let mut table = Table::new();
        table.load_preset(NOTHING).set_header([
            "NODE",
            "REACHABLE",
            "KIND",
            "HOLDS",
            "PTTL",
            "ROLE",
            "DURABILITY",
            "EVICTION",
            "VOTES",
        ]);
        for node in &self.nodes {
            let holds = if node.holds.is_empty() {
                "-".to_owned()
            } else {
                node.holds
                    .iter()
                    .map(|h| format!("{} {}ms", short(&h.token), h.ttl_ms))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let mut votes = node.vote.to_owned();
            if let Some(why) = node.refusal_short.as_ref().or(node.error.as_ref()) {
                votes.push_str(&format!(": {why}"));
            }
            table.add_row([
                node.node.clone(),
                yes_no(node.reachable).to_owned(),
                node.kind.clone().unwrap_or_else(|| "-".into()),
                holds,
                node.pttl_ms.map_or("-".into(), |ms| format!("{ms}ms")),
                node.role.clone(),
                node.durability.to_owned(),
                node.eviction_policy
                    .clone()
                    .unwrap_or_else(|| "unknown".into()),
                votes,
            ]);
        }
        let mut out = format!(
            "{} (key {}) on {} nodes, quorum {}\n{table}\n",
            self.resource,
            self.key,
            self.nodes.len(),
            self.quorum
        );
        out.push_str(&self.verdict());
        out.push_str(&format!(
            "votes count on {} of {} nodes (quorum {}); delayed-restart rule: {}\n",
            self.voting,
            self.nodes.len(),
            self.quorum,
            self.max_ttl_ms.map_or_else(
                || "not checked (pass --max-ttl)".to_owned(),
                |m| format!(
                    "max ttl {}",
                    humantime::format_duration(Duration::from_millis(m as u64))
                )
            )
        ));
        out
    }

    /// The line that says who holds the resource.
    fn verdict(&self) -> String {
        let reachable = format!("{} of {} nodes reachable", self.reachable, self.nodes.len());
        match (&self.kind, self.held_on) {
            (Some(kind), _) => format!(
                "HELD: owner {} ({kind}) on a quorum of {} nodes (quorum {}); {reachable}\n",
                self.holders
                    .iter()
                    .map(|t| short(t))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.nodes.len(),
                self.quorum
            ),
            // Too few nodes read to tell: the unread ones may hold a quorum's worth.
            (None, on) if self.reachable < self.quorum => format!(
                "UNKNOWN: too few nodes reachable to tell (quorum {}); holds seen on {on}; {reachable}\n",
                self.quorum
            ),
            (None, 0) => format!("FREE: no node holds it; {reachable}\n"),
            (None, on) => format!(
                "NOT HELD: holds on {on} of {} nodes, below the quorum {}; {reachable}\n",
                self.nodes.len(),
                self.quorum
            ),
        }
    }
}

impl NodeReport {
    fn new(
        node: &NodeId,
        view: Result<&redquorum::NodeView, &redquorum::NodeError>,
        health: &NodeHealth,
    ) -> Self {
        let refusal = health.refusal();
        let (reachable, error) = match view {
            Ok(_) => (true, None),
            Err(error) => (false, Some(cause(error))),
        };
        let view = view.ok();
        Self {
            node: node.to_string(),
            reachable,
            error,
            kind: view.and_then(|v| v.kind()).map(str::to_owned),
            blocked_ms: view.and_then(|v| v.blocked()).map(|b| b.as_millis()),
            holds: view.map_or_else(Vec::new, |v| {
                v.holds()
                    .iter()
                    .map(|hold| HoldReport {
                        token: hold.token().to_owned(),
                        ttl_ms: hold.left().as_millis(),
                        owner: hold.owner_info().map(ToString::to_string),
                    })
                    .collect()
            }),
            intent: view.and_then(|v| v.intent()).map(str::to_owned),
            fence: view.and_then(|v| v.fence()),
            pttl_ms: view.and_then(|v| v.ttl()).map(|t| t.as_millis()),
            role: health.role().to_string(),
            durability: durability_name(health.durability()),
            eviction_policy: health.eviction_policy().map(str::to_owned),
            evicts_lock_keys: health.evicts_lock_keys(),
            uptime_s: health.uptime().map(|u| u.as_secs()),
            vote: match (reachable, refusal) {
                (false, _) => "unreachable",
                (true, Some(_)) => "refused",
                (true, None) => "votes",
            },
            refusal: refusal.map(ToString::to_string),
            refusal_short: refusal.map(short_reason),
        }
    }
}

/// On how many nodes the most widely held token is.
fn most_held(nodes: &[NodeReport]) -> usize {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for hold in nodes.iter().flat_map(|n| &n.holds) {
        match counts.iter_mut().find(|(t, _)| *t == hold.token) {
            Some((_, count)) => *count += 1,
            None => counts.push((&hold.token, 1)),
        }
    }
    counts.into_iter().map(|(_, c)| c).max().unwrap_or(0)
}

/// The cause of a node error (its node is already in the row).
fn cause(error: &redquorum::NodeError) -> String {
    error.reason()
}

fn short(token: &str) -> String {
    token.chars().take(SHORT_TOKEN).collect()
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
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
fn durability_name(durability: Durability) -> &'static str {
    match durability {
        Durability::Fsync => "aof_always",
        Durability::NotDurable => "not_durable",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(tokens: &[&str], reachable: bool) -> NodeReport {
        NodeReport {
            node: "h:1".into(),
            reachable,
            error: None,
            kind: Some("lock".into()),
            blocked_ms: None,
            holds: tokens
                .iter()
                .map(|t| HoldReport {
                    token: (*t).into(),
                    ttl_ms: 10,
                    owner: None,
                })
                .collect(),
            intent: None,
            fence: None,
            pttl_ms: None,
            role: "master".into(),
            durability: "unknown",
            eviction_policy: None,
            evicts_lock_keys: None,
            uptime_s: None,
            vote: "votes",
            refusal: None,
            refusal_short: None,
        }
    }

    #[test]
    fn the_most_held_token_is_counted_across_nodes() {
        let nodes = [
            node(&["a"], true),
            node(&["a", "b"], true),
            node(&[], false),
        ];
        assert_eq!(most_held(&nodes), 2);
        assert_eq!(most_held(&[]), 0);
    }

    fn report(nodes: Vec<NodeReport>, quorum: usize) -> Report {
        Report {
            resource: "r".into(),
            key: "lock:r".into(),
            fence_key: "fence:r".into(),
            quorum,
            reachable: nodes.iter().filter(|n| n.reachable).count(),
            held: false,
            kind: None,
            holders: Vec::new(),
            held_on: most_held(&nodes),
            max_ttl_ms: None,
            voting: 0,
            nodes,
        }
    }

    #[test]
    fn free_only_when_a_quorum_was_read() {
        let unread = report(
            vec![node(&[], false), node(&[], false), node(&[], false)],
            2,
        );
        assert!(
            unread.verdict().starts_with("UNKNOWN: "),
            "{}",
            unread.verdict()
        );
        assert!(unread.verdict().contains("0 of 3 nodes reachable"));
        let read = report(vec![node(&[], true), node(&[], true), node(&[], false)], 2);
        assert!(read.verdict().starts_with("FREE: "), "{}", read.verdict());
    }

    #[test]
    fn a_refused_restart_is_said_in_short() {
        let reason = Ineligible::RecentRestart {
            uptime: Duration::from_secs(3),
            max_ttl: Duration::from_secs(30),
        };
        assert_eq!(short_reason(&reason), "restarted 3s ago, max ttl 30s");
    }
}
