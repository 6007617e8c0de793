//! `redquorum status`: who holds a resource's lock on each node, and for how long.
//!
//! It reads the raw key and its PTTL on every node with a plain RESP
//! connection (no lock logic), so it shows what is really there, including
//! keys left by a holder that crashed. Each node's health (role, durability,
//! eviction policy, whether its votes count) comes from the library's own
//! probes, see `health.rs`.

use std::process::ExitCode;
use std::time::Duration;

use redquorum_harness::{Reply, RespConn};

use crate::arg_values;
use crate::cmd::common;
use crate::cmd::health::{self, Health, Vote};
use crate::exit;
use crate::nodes_arg::NodesArg;

/// How many hex digits of an owner token the table shows.
const SHORT_OWNER: usize = 8;

/// Options of `redquorum status`.
#[derive(Debug, clap::Args)]
pub(crate) struct StatusArgs {
    /// The resource to inspect.
    #[arg(value_parser = arg_values::non_empty)]
    resource: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Prefix of the lock key on each node.
    #[arg(long, default_value = "lock:")]
    key_prefix: String,
    /// Connect and read timeout per node.
    #[arg(long, default_value = "500ms", value_parser = arg_values::positive_duration)]
    timeout: Duration,
    /// The longest lock TTL your clients use (their `RedlockBuilder::max_ttl`).
    /// With it, a node that is not durable (no AOF `appendfsync always`) and
    /// has been up for less than this is reported as refused: it may have
    /// forgotten keys it granted before a restart. Without it that rule is not
    /// checked. Must be longer than --timeout.
    #[arg(long, value_parser = arg_values::duration)]
    max_ttl: Option<Duration>,
}

/// What one node said about the key.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeStatus {
    /// `host:port` (never the password).
    node: String,
    /// Why the node could not be read, if it could not.
    error: Option<String>,
    /// The key's value (the owner token), if the key exists.
    owner: Option<String>,
    /// The key's PTTL in ms, if the key exists.
    pttl_ms: Option<i64>,
    /// The node's health, if it could be probed.
    health: Option<Health>,
}

/// A node URL split into what a RESP connection needs.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    addr: String,
    user: Option<String>,
    password: Option<String>,
    db: Option<String>,
}

pub(crate) async fn run(nodes: &NodesArg, args: StatusArgs) -> ExitCode {
    let urls = match common::given_urls(nodes, "status") {
        Ok(urls) => urls,
        Err(code) => return code,
    };
    if let Some(max_ttl) = args.max_ttl.filter(|m| *m <= args.timeout) {
        eprintln!(
            "redquorum status: --max-ttl {} must be longer than --timeout {}",
            humantime::format_duration(max_ttl),
            humantime::format_duration(args.timeout)
        );
        return exit::USAGE.into();
    }
    let key = format!("{}{}", args.key_prefix, args.resource);
    let timeout = args.timeout;
    let probe_key = key.clone();
    let health_urls = urls.clone();
    // Blocking sockets, one thread per node, so a dead node costs one timeout, not N.
    let statuses = tokio::task::spawn_blocking(move || {
        std::thread::scope(|scope| {
            let probes: Vec<_> = urls
                .iter()
                .map(|url| scope.spawn(|| probe(url, &probe_key, timeout)))
                .collect();
            probes
                .into_iter()
                .map(|p| p.join().expect("probe threads do not panic"))
                .collect::<Vec<_>>()
        })
    });
    let healths = health::probe(&health_urls, timeout, args.max_ttl, &args.key_prefix);
    let (statuses, healths) = tokio::join!(statuses, healths);
    let mut statuses = match statuses {
        Ok(statuses) => statuses,
        Err(e) => {
            eprintln!("redquorum status: {e}");
            return exit::SOFTWARE.into();
        }
    };
    let health_error = match healths {
        Ok(healths) => {
            for (status, health) in statuses.iter_mut().zip(healths) {
                status.health = Some(health);
            }
            None
        }
        // Shown in the table's last line and as the JSON `health_error`.
        Err(error) => Some(error),
    };
    let mut report = Report::new(&args.resource, &key, statuses);
    report.max_ttl = args.max_ttl;
    report.health_error = health_error;
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.table());
    }
    if report.reachable() < report.quorum {
        exit::UNAVAILABLE.into()
    } else {
        ExitCode::SUCCESS
    }
}

fn probe(url: &str, key: &str, timeout: Duration) -> NodeStatus {
    let target = parse_target(url);
    let node = target
        .as_ref()
        .map_or_else(|_| "?".to_owned(), |t| t.addr.clone());
    let read = target.and_then(|target| read_key(&target, key, timeout));
    match read {
        Ok((owner, pttl_ms)) => NodeStatus {
            node,
            error: None,
            owner,
            pttl_ms,
            health: None,
        },
        Err(error) => NodeStatus {
            node,
            error: Some(error),
            owner: None,
            pttl_ms: None,
            health: None,
        },
    }
}

fn read_key(
    target: &Target,
    key: &str,
    timeout: Duration,
) -> Result<(Option<String>, Option<i64>), String> {
    let mut conn = RespConn::connect_addr(&target.addr, timeout).map_err(|e| e.to_string())?;
    let mut call = |args: &[&str]| -> Result<Reply, String> {
        match conn.command(args).map_err(|e| e.to_string())? {
            Reply::Error(e) => Err(e),
            reply => Ok(reply),
        }
    };
    match (&target.user, &target.password) {
        (Some(user), Some(password)) => call(&["AUTH", user, password])?,
        (None, Some(password)) => call(&["AUTH", password])?,
        _ => Reply::Bulk(None),
    };
    if let Some(db) = &target.db {
        call(&["SELECT", db])?;
    }
    let owner = call(&["GET", key])?.as_text();
    let pttl = call(&["PTTL", key])?.as_int();
    // PTTL: -2 no key, -1 no expiry (not a lock we wrote, but show it).
    let pttl = owner.as_ref().and(pttl);
    Ok((owner, pttl))
}

/// `redis://[user:password@]host:port[/db]`; `rediss://` is refused (no TLS here).
fn parse_target(url: &str) -> Result<Target, String> {
    let rest = if let Some(rest) = url.strip_prefix("redis://") {
        rest
    } else if url.starts_with("rediss://") {
        return Err("TLS (rediss://) is not supported by status".to_owned());
    } else {
        return Err("not a redis:// URL".to_owned());
    };
    let (userinfo, hostpart) = match rest.rsplit_once('@') {
        Some((userinfo, hostpart)) => (Some(userinfo), hostpart),
        None => (None, rest),
    };
    let (hostport, db) = match hostpart.split_once('/') {
        Some((hostport, db)) if !db.is_empty() => (hostport, Some(db.to_owned())),
        Some((hostport, _)) => (hostport, None),
        None => (hostpart, None),
    };
    let addr = if hostport.contains(':') {
        hostport.to_owned()
    } else {
        format!("{hostport}:6379")
    };
    let (user, password) = match userinfo.map(|u| u.split_once(':')) {
        Some(Some((user, password))) => (
            (!user.is_empty()).then(|| user.to_owned()),
            Some(password.to_owned()),
        ),
        Some(None) => (None, userinfo.map(str::to_owned)),
        None => (None, None),
    };
    Ok(Target {
        addr,
        user,
        password,
        db,
    })
}

/// Every node's answer plus the summary: the owner seen on most nodes.
#[derive(Debug)]
struct Report {
    resource: String,
    key: String,
    quorum: usize,
    nodes: Vec<NodeStatus>,
    holder: Option<String>,
    held_on: usize,
    /// The delayed-restart rule's max TTL (`--max-ttl`), if checked.
    max_ttl: Option<Duration>,
    /// Why no node's health could be probed, if so.
    health_error: Option<String>,
}

impl Report {
    fn new(resource: &str, key: &str, nodes: Vec<NodeStatus>) -> Self {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for owner in nodes.iter().filter_map(|n| n.owner.as_ref()) {
            match counts.iter_mut().find(|(o, _)| o == owner) {
                Some((_, count)) => *count += 1,
                None => counts.push((owner.clone(), 1)),
            }
        }
        let top = counts.into_iter().max_by_key(|(_, count)| *count);
        Self {
            resource: resource.to_owned(),
            key: key.to_owned(),
            quorum: nodes.len() / 2 + 1,
            held_on: top.as_ref().map_or(0, |(_, count)| *count),
            holder: top.map(|(owner, _)| owner),
            nodes,
            max_ttl: None,
            health_error: None,
        }
    }

    fn vote(node: &NodeStatus) -> Vote {
        Vote::of(node.error.is_none(), node.health.as_ref())
    }

    /// Nodes whose vote would count toward a quorum now.
    fn voting(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| Self::vote(n) == Vote::Counts)
            .count()
    }

    fn reachable(&self) -> usize {
        self.nodes.iter().filter(|n| n.error.is_none()).count()
    }

    fn is_held(&self) -> bool {
        self.held_on >= self.quorum
    }

    fn table(&self) -> String {
        let mut out = format!(
            "{} (key {}) on {} nodes, quorum {}\n{:<22} {:<9} {:<10} {:<9} {:<7} {:<16} {:<16} {}\n",
            self.resource,
            self.key,
            self.nodes.len(),
            self.quorum,
            "NODE",
            "REACHABLE",
            "OWNER",
            "PTTL",
            "ROLE",
            "DURABILITY",
            "EVICTION",
            "VOTES"
        );
        for node in &self.nodes {
            let (reachable, owner, pttl) = match &node.error {
                Some(_) => ("no", "-".to_owned(), "-".to_owned()),
                None => (
                    "yes",
                    node.owner.as_deref().map_or("-".to_owned(), short),
                    node.pttl_ms.map_or("-".to_owned(), |ms| format!("{ms}ms")),
                ),
            };
            let health = node.health.as_ref();
            let role = health.map_or("unknown".to_owned(), |h| h.role.to_string());
            let durability = health.map_or("unknown".to_owned(), |h| h.durability.to_string());
            let eviction = health
                .and_then(|h| h.eviction_policy.clone())
                .unwrap_or_else(|| "unknown".to_owned());
            let mut votes = health::vote_cell(Self::vote(node), health);
            if let Some(error) = &node.error {
                votes.push_str(&format!(" ({error})"));
            }
            out.push_str(&format!(
                "{:<22} {reachable:<9} {owner:<10} {pttl:<9} {role:<7} {durability:<16} {eviction:<16} {votes}\n",
                node.node
            ));
        }
        out.push_str(&match &self.holder {
            Some(owner) => format!(
                "{}: owner {} on {} of {} nodes (quorum {}); {} of {} nodes reachable\n",
                if self.is_held() { "HELD" } else { "NOT HELD" },
                short(owner),
                self.held_on,
                self.nodes.len(),
                self.quorum,
                self.reachable(),
                self.nodes.len()
            ),
            None => format!(
                "FREE: no node holds the key; {} of {} nodes reachable\n",
                self.reachable(),
                self.nodes.len()
            ),
        });
        out.push_str(&format!(
            "votes count on {} of {} nodes (quorum {}); delayed-restart rule: {}\n",
            self.voting(),
            self.nodes.len(),
            self.quorum,
            self.max_ttl.map_or_else(
                || "not checked (pass --max-ttl)".to_owned(),
                |m| format!("max ttl {}", humantime::format_duration(m))
            )
        ));
        if let Some(error) = &self.health_error {
            out.push_str(&format!("node health not checked: {error}\n"));
        }
        out
    }

    fn json(&self) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|n| {
                let health = n.health.as_ref();
                format!(
                    "{{\"node\":{},\"reachable\":{},\"owner\":{},\"pttl_ms\":{},\"error\":{},\
                     \"role\":{},\"durability\":{},\"eviction_policy\":{},\"evicts_lock_keys\":{},\
                     \"uptime_s\":{},\"vote\":{},\"refusal\":{}}}",
                    json_str(&n.node),
                    n.error.is_none(),
                    json_opt(n.owner.as_deref()),
                    n.pttl_ms.map_or("null".to_owned(), |ms| ms.to_string()),
                    json_opt(n.error.as_deref()),
                    json_str(&health.map_or("unknown".to_owned(), |h| h.role.to_string())),
                    json_str(health.map_or("unknown", |h| health::durability_name(h.durability))),
                    json_opt(health.and_then(|h| h.eviction_policy.as_deref())),
                    health
                        .and_then(|h| h.eviction_policy.as_deref())
                        .map_or("null".to_owned(), |p| (p != "noeviction").to_string()),
                    health
                        .and_then(|h| h.uptime)
                        .map_or("null".to_owned(), |u| u.as_secs().to_string()),
                    json_str(Self::vote(n).name()),
                    json_opt(
                        health
                            .and_then(|h| h.refusal.as_ref())
                            .map(ToString::to_string)
                            .as_deref()
                    ),
                )
            })
            .collect();
        format!(
            "{{\"resource\":{},\"key\":{},\"quorum\":{},\"reachable\":{},\"held\":{},\"holder\":{},\"held_on\":{},\
             \"max_ttl_ms\":{},\"voting\":{},\"health_error\":{},\"nodes\":[{}]}}",
            json_str(&self.resource),
            json_str(&self.key),
            self.quorum,
            self.reachable(),
            self.is_held(),
            json_opt(self.holder.as_deref()),
            self.held_on,
            self.max_ttl
                .map_or("null".to_owned(), |m| m.as_millis().to_string()),
            self.voting(),
            json_opt(self.health_error.as_deref()),
            nodes.join(",")
        )
    }
}

fn short(owner: &str) -> String {
    owner.chars().take(SHORT_OWNER).collect()
}

fn json_opt(value: Option<&str>) -> String {
    value.map_or("null".to_owned(), json_str)
}

/// A JSON string literal (RFC 8259 escaping).
fn json_str(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, owner: Option<&str>, error: Option<&str>) -> NodeStatus {
        NodeStatus {
            node: name.to_owned(),
            error: error.map(str::to_owned),
            owner: owner.map(str::to_owned),
            pttl_ms: owner.map(|_| 900),
            health: None,
        }
    }

    #[test]
    fn urls_split_into_address_credentials_and_db() {
        let t = parse_target("redis://app:s3cret@10.0.0.1:6380/2").unwrap();
        assert_eq!(t.addr, "10.0.0.1:6380");
        assert_eq!(t.user.as_deref(), Some("app"));
        assert_eq!(t.password.as_deref(), Some("s3cret"));
        assert_eq!(t.db.as_deref(), Some("2"));
        let t = parse_target("redis://:pw@host").unwrap();
        assert_eq!(
            (t.addr.as_str(), t.user, t.password.as_deref()),
            ("host:6379", None, Some("pw"))
        );
        assert!(parse_target("rediss://host:6379").is_err());
        assert!(parse_target("http://host").is_err());
    }

    #[test]
    fn report_names_the_majority_owner_and_whether_it_is_a_quorum() {
        let report = Report::new(
            "r",
            "lock:r",
            vec![
                node("a:1", Some("aaaaaaaaaaaa"), None),
                node("b:1", Some("aaaaaaaaaaaa"), None),
                node("c:1", Some("bbbbbbbbbbbb"), None),
                node("d:1", None, Some("connection refused")),
                node("e:1", None, None),
            ],
        );
        assert_eq!(report.held_on, 2);
        assert_eq!(report.holder.as_deref(), Some("aaaaaaaaaaaa"));
        assert!(!report.is_held());
        assert_eq!(report.reachable(), 4);
        assert!(
            report
                .table()
                .contains("NOT HELD: owner aaaaaaaa on 2 of 5 nodes")
        );
        assert!(report.json().contains("\"held_on\":2"));
    }

    #[test]
    fn health_shows_per_node_with_the_vote_and_the_voting_count() {
        use redquorum::{Durability, Ineligible, Role};
        let health = |refusal| Health {
            role: Role::Master,
            durability: Durability::NotDurable,
            eviction_policy: Some("allkeys-lru".to_owned()),
            uptime: Some(Duration::from_secs(2)),
            refusal,
        };
        let mut young = node("a:1", None, None);
        young.health = Some(health(Some(Ineligible::RecentRestart {
            uptime: Duration::from_secs(2),
            max_ttl: Duration::from_secs(30),
        })));
        let mut old = node("b:1", None, None);
        old.health = Some(health(None));
        let down = node("c:1", None, Some("connection refused"));
        let mut report = Report::new("r", "lock:r", vec![young, old, down]);
        report.max_ttl = Some(Duration::from_secs(30));
        assert_eq!(report.voting(), 1);
        let table = report.table();
        assert!(
            table.contains(
                "master  not durable      allkeys-lru      refused: restarted 2s ago, max ttl 30s"
            ),
            "{table}"
        );
        assert!(
            table.contains("unreachable (connection refused)"),
            "{table}"
        );
        assert!(
            table.contains(
                "votes count on 1 of 3 nodes (quorum 2); delayed-restart rule: max ttl 30s"
            ),
            "{table}"
        );
        let json = report.json();
        assert!(json.contains("\"voting\":1,"), "{json}");
        assert!(json.contains("\"max_ttl_ms\":30000"), "{json}");
        assert!(json.contains("\"evicts_lock_keys\":true"), "{json}");
        assert!(
            json.contains("\"vote\":\"refused\",\"refusal\":\"not durable and up for 2s"),
            "{json}"
        );
        assert_eq!(json.matches("\"vote\":\"votes\"").count(), 1, "{json}");
        assert_eq!(
            json.matches("\"vote\":\"unreachable\"").count(),
            1,
            "{json}"
        );
        report.health_error = Some("even node count 4".to_owned());
        assert!(
            report
                .table()
                .contains("node health not checked: even node count 4")
        );
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_str("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
    }
}
