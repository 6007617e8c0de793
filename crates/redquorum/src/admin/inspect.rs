//! Inspection: who holds a resource, as each node sees it ([`Redlock::inspect`]).
//! Read-only, for operators and tools (`redquorum status`): it takes no
//! lock and changes nothing.

use std::time::Duration;

use fred::types::Value;

use crate::error::Error;
use crate::node_error::NodeError;
use crate::node_id::NodeId;
use crate::protocol::fence::FenceToken;
use crate::protocol::owner_info::OwnerInfo;
use crate::protocol::resource_ops;
use crate::quorum::tally;
use crate::redlock::Redlock;

pub use super::hold_view::HoldView;

/// What one node says about a resource's lock.
///
/// # Examples
///
/// ```no_run
/// # fn demo(view: &redquorum::NodeView) {
/// match view.kind() {
///     Some(kind) => println!("{kind} held by {} holds", view.holds().len()),
///     None => println!("free"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeView {
    kind: Option<String>,
    owner: Option<String>,
    intent: Option<String>,
    fence: Option<u64>,
    ttl: Option<Duration>,
    blocked: Option<Duration>,
    holds: Vec<HoldView>,
}

impl NodeView {
    /// The kind of lock holding the resource here (`lock`, `write`, `read`,
    /// `reentrant`, `permit`, `leader`), or `None` when it is free.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(view: &redquorum::NodeView) {
    /// assert!(view.kind().is_none() || !view.holds().is_empty() || view.intent().is_some());
    /// # }
    /// ```
    #[must_use]
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }

    /// The live holds: each one's token, time left, and owner information.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(view: &redquorum::NodeView) {
    /// for hold in view.holds() {
    ///     println!("{}: {:?} left", hold.token(), hold.left());
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn holds(&self) -> &[HoldView] {
        &self.holds
    }

    /// How long the lock stays blocked by a lock-delay (its last holder
    /// vanished without releasing), if it is.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(view: &redquorum::NodeView) {
    /// if let Some(left) = view.blocked() { println!("blocked for {left:?}"); }
    /// # }
    /// ```
    #[must_use]
    pub fn blocked(&self) -> Option<Duration> {
        self.blocked
    }

    /// The reentrant owner id, for a reentrant lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(view: &redquorum::NodeView) {
    /// if let Some(owner) = view.owner() { println!("owner {owner}"); }
    /// # }
    /// ```
    #[must_use]
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// A waiting writer's token, while readers hold the lock.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(view: &redquorum::NodeView) {
    /// if let Some(writer) = view.intent() { println!("writer {writer} waits"); }
    /// # }
    /// ```
    #[must_use]
    pub fn intent(&self) -> Option<&str> {
        self.intent.as_deref()
    }

    /// The resource's fence counter on this node (the highest token it has
    /// proposed or taken back), if it has one.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(view: &redquorum::NodeView) {
    /// println!("fence {:?}", view.fence());
    /// # }
    /// ```
    #[must_use]
    pub fn fence(&self) -> Option<u64> {
        self.fence
    }

    /// The lock key's own expiry (the latest of its holds), if it exists.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(view: &redquorum::NodeView) {
    /// println!("key expires in {:?}", view.ttl());
    /// # }
    /// ```
    #[must_use]
    pub fn ttl(&self) -> Option<Duration> {
        self.ttl
    }

    /// Parses the inspect operation's answer (the lock script).
    fn parse(answer: Value) -> Option<Self> {
        let Value::Array(items) = answer else {
            return None;
        };
        let text = |index: usize| {
            items
                .get(index)
                .and_then(Value::as_string)
                .filter(|s| !s.is_empty())
        };
        let millis = |value: &Value| value.as_i64().filter(|ms| *ms > 0).map(ms);
        let holds = items
            .get(6..)
            .unwrap_or_default()
            .chunks(4)
            .filter_map(|hold| {
                Some(HoldView {
                    token: hold.first()?.as_string()?,
                    left: millis(hold.get(1)?)?,
                    info: hold
                        .get(2)
                        .and_then(Value::as_string)
                        .and_then(|s| OwnerInfo::decode(&s)),
                    fence: hold
                        .get(3)
                        .and_then(Value::as_string)
                        .and_then(|s| s.parse().ok())
                        .map(FenceToken::new),
                })
            })
            .collect();
        Some(Self {
            kind: text(0),
            owner: text(1),
            intent: text(2),
            fence: text(3).and_then(|f| f.parse().ok()),
            ttl: items.get(4).and_then(millis),
            blocked: items.get(5).and_then(millis),
            holds,
        })
    }
}

fn ms(value: i64) -> Duration {
    Duration::from_millis(u64::try_from(value).unwrap_or_default())
}

/// Every node's view of one resource's lock ([`Redlock::inspect`]).
///
/// # Examples
///
/// ```no_run
/// # fn demo(inspection: &redquorum::Inspection) {
/// for (node, view) in inspection.nodes() {
///     match view {
///         Ok(view) => println!("{node}: {:?}", view.kind()),
///         Err(error) => println!("{node}: unreachable ({error})"),
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct Inspection {
    resource: String,
    nodes: Vec<(NodeId, Result<NodeView, NodeError>)>,
}

impl Inspection {
    /// The resource inspected.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(inspection: &redquorum::Inspection) {
    /// println!("{}", inspection.resource());
    /// # }
    /// ```
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Each node's view, or why it could not be read, in configured order.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(inspection: &redquorum::Inspection) {
    /// let answered = inspection.nodes().filter(|(_, view)| view.is_ok()).count();
    /// # }
    /// ```
    pub fn nodes(&self) -> impl Iterator<Item = (&NodeId, Result<&NodeView, &NodeError>)> {
        self.nodes.iter().map(|(node, view)| (node, view.as_ref()))
    }

    /// The tokens that hold the resource on at least `quorum` nodes, with
    /// the kind: the holders the quorum recognises, sorted. Empty when free.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn demo(inspection: &redquorum::Inspection) {
    /// for (kind, token) in inspection.holders(3) { println!("{kind} {token}"); }
    /// # }
    /// ```
    #[must_use]
    pub fn holders(&self, quorum: usize) -> Vec<(String, String)> {
        let holders_per_node = self.nodes.iter().filter_map(|(_, view)| {
            let view = view.as_ref().ok()?;
            let kind = view.kind()?;
            Some(
                view.holds
                    .iter()
                    .map(|hold| (kind.to_owned(), hold.token.clone())),
            )
        });
        tally::on_quorum(holders_per_node, quorum)
    }
}

impl Redlock {
    /// Reads who holds `resource` on every node: its lock kind, each live
    /// hold's token and time left, a waiting writer, the fence counter.
    /// Read-only; one concurrent round trip.
    ///
    /// # Errors
    ///
    /// [`Error::EmptyResource`]. A node that cannot be read is reported in
    /// its entry, not as an error.
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
    /// let lock = redlock.try_read_lock("catalog").await?;
    /// let inspection = redlock.inspect("catalog").await?;
    /// let holders = inspection.holders(redlock.quorum());
    /// assert_eq!(holders, vec![("read".to_owned(), lock.owner().to_string())]);
    /// # Ok(()) }
    /// ```
    pub async fn inspect(&self, resource: &str) -> Result<Inspection, Error> {
        if resource.is_empty() {
            return Err(Error::EmptyResource);
        }
        let keys = self.resource_keys(resource);
        let answers = self
            .shared_quorum()
            .read_all(resource_ops::inspect(&keys))
            .await;
        let nodes = answers
            .into_iter()
            .map(|(node, answer)| {
                let view = answer.and_then(|value| {
                    NodeView::parse(value).ok_or_else(|| {
                        let error = fred::error::Error::new(
                            fred::error::ErrorKind::Protocol,
                            "the inspect answer has another shape",
                        );
                        NodeError::new(node.clone(), error)
                    })
                });
                (node, view)
            })
            .collect();
        Ok(Inspection {
            resource: resource.to_owned(),
            nodes,
        })
    }
}
