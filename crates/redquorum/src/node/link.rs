//! A node's link: up, or down and why.
//!
//! A node is down from the moment its connection fails (refused, closed, a
//! failed reconnect, a handshake that fails) or a call to it goes unanswered
//! for the whole node timeout (a stopped server, a black hole). While it is
//! down, operations skip it at once (`NodeOutcome::Down`) instead of each
//! waiting out the node timeout; only what undoes earlier operations is
//! still sent (node/server.rs). It is up again when it reconnects, or when a
//! background `PING` is answered: a node that went silent on an open
//! connection never reconnects, and connection events can arrive out of
//! order, so the `PING` is what decides (every earlier call on the
//! connection has been answered by then: replies come in order). The
//! delayed-restart rule is not this file's: a reconnection still makes the
//! node's votes wait for its probe (health/eligibility.rs).
//!
//! Each change is logged once (a warning going down, info coming back) and
//! set on the `redquorum_node_up` gauge; calls skipped meanwhile log nothing.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use fred::clients::Client;
use fred::error::{Error as FredError, ErrorKind};
use fred::interfaces::{ClientLike, EventInterface};
use fred::types::{ClusterHash, CustomCommand, Value};
use tokio::runtime::Handle;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use crate::node_id::NodeId;

/// A node's link state, shared by the node, its batcher and its watchers.
#[derive(Debug)]
pub(crate) struct Link {
    id: NodeId,
    /// Sends the rejoin `PING`s of a down node.
    client: Client,
    /// How long a `PING` may go unanswered, and the pause between two.
    node_timeout: Duration,
    /// Where the rejoin probe runs (the `Redlock`'s runtime).
    runtime: Handle,
    /// Why the node is down (what its connection, or its silence, said), if it is.
    down: Mutex<Option<FredError>>,
}

impl Link {
    /// An up link for `client` (requires a Tokio runtime).
    pub(crate) fn new(id: NodeId, client: Client, node_timeout: Duration) -> Self {
        crate::metrics::node_up(&id, true);
        Self {
            id,
            client,
            node_timeout,
            runtime: Handle::current(),
            down: Mutex::new(None),
        }
    }

    /// Why the node is down, or `None` while it is up.
    pub(crate) fn down(&self) -> Option<FredError> {
        self.lock().clone()
    }

    /// `error` as the node's answer: a timeout or a cancel while the
    /// connection is down is that failure instead.
    pub(crate) fn explain(&self, error: FredError) -> FredError {
        match error.kind() {
            ErrorKind::Timeout | ErrorKind::Canceled => self.down().unwrap_or(error),
            _ => error,
        }
    }

    /// A call went unanswered for the node timeout: the node is down until
    /// it answers a `PING` or reconnects.
    pub(crate) fn stopped_answering(self: &Arc<Self>) {
        let cause = FredError::new(
            ErrorKind::Timeout,
            format!(
                "no answer within the node timeout ({} ms): stopped, overloaded or unreachable",
                self.node_timeout.as_millis()
            ),
        );
        // A connection failure already recorded says more than the silence.
        self.set_down(cause, false);
    }

    /// Marks the node down with `cause` (replacing an earlier cause only if
    /// `replace`); on the change from up, warns and starts the rejoin probe.
    fn set_down(self: &Arc<Self>, cause: FredError, replace: bool) {
        let was_up = {
            let mut down = self.lock();
            let was_up = down.is_none();
            if was_up {
                tracing::warn!(node = %self.id, cause = %cause, "node down: operations skip it until it answers again");
                crate::metrics::node_up(&self.id, false);
            }
            if was_up || replace {
                *down = Some(cause);
            }
            was_up
        };
        if was_up {
            self.spawn_rejoin_probe();
        }
    }

    /// The node answered (or reconnected): up again.
    fn set_up(&self) {
        let mut down = self.lock();
        if down.take().is_some() {
            tracing::info!(node = %self.id, "node up again: operations use it");
            crate::metrics::node_up(&self.id, true);
        }
    }

    /// `PING`s the node until it answers or is up again, one unanswered
    /// `PING` (at most a node timeout) and a pause apart.
    fn spawn_rejoin_probe(self: &Arc<Self>) {
        let link = Arc::downgrade(self);
        let ping = CustomCommand::new_static("PING", ClusterHash::FirstKey, false);
        self.runtime.spawn(async move {
            loop {
                let Some(this) = link.upgrade().filter(|l| l.down().is_some()) else {
                    return;
                };
                let (client, pause) = (this.client.clone(), this.node_timeout);
                drop(this);
                let answered = client.custom::<Value, &str>(ping.clone(), vec![]).await;
                let Some(this) = link.upgrade() else { return };
                if answered.is_ok() {
                    this.set_up();
                    return;
                }
                drop(this);
                tokio::time::sleep(pause).await;
            }
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<FredError>> {
        crate::sync::lock(&self.down)
    }
}

/// Keeps `link` up to date with `client`'s connection events, until the
/// link (the node) is gone. `tls`: the node was given as `rediss://`.
pub(crate) fn spawn_link_watch(client: &Client, tls: bool, link: Weak<Link>) -> JoinHandle<()> {
    // Subscribed before connect(), so the first connection's events are seen too.
    let mut errors = client.error_rx();
    let mut reconnects = client.reconnect_rx();
    tokio::spawn(async move {
        loop {
            let failure = tokio::select! {
                event = errors.recv() => match event {
                    Ok((error, _)) => Some(cause(&error, tls)),
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                },
                event = reconnects.recv() => match event {
                    Ok(_) | Err(RecvError::Lagged(_)) => None,
                    Err(RecvError::Closed) => return,
                },
            };
            let Some(link) = link.upgrade() else { return };
            match failure {
                Some(cause) => link.set_down(cause, true),
                None => link.set_up(),
            }
        }
    })
}

/// The kind of a TLS failure (fred has `ErrorKind::Tls` only with a TLS
/// feature; without one no node uses TLS, so `IO` is never reached as such).
#[cfg(feature = "tls")]
const TLS_KIND: ErrorKind = ErrorKind::Tls;
#[cfg(not(feature = "tls"))]
const TLS_KIND: ErrorKind = ErrorKind::IO;

/// A connection error said so that an operator knows what to fix.
fn cause(error: &FredError, tls: bool) -> FredError {
    let details = error.details();
    let (kind, text) = match error.kind() {
        ErrorKind::IO if details.contains("ConnectionRefused") => {
            (ErrorKind::IO, "cannot connect: connection refused".to_owned())
        }
        ErrorKind::IO if !tls && details.contains("ConnectionReset") => (
            ErrorKind::IO,
            "connection reset by the server (a TLS port? then use rediss://)".to_owned(),
        ),
        ErrorKind::Timeout if tls => (
            TLS_KIND,
            "TLS handshake failed: no answer within the connect timeout (is the port plain text?)"
                .to_owned(),
        ),
        ErrorKind::Timeout => (
            ErrorKind::Timeout,
            "cannot connect: no answer to the handshake within the connect timeout (a TLS port, or a stopped server?)".to_owned(),
        ),
        ErrorKind::Protocol | ErrorKind::Parse => (
            ErrorKind::Protocol,
            format!("not Redis: the server's answer is not RESP ({details})"),
        ),
        ErrorKind::IO if tls => (TLS_KIND, format!("TLS handshake failed: {details}")),
        kind => (kind.clone(), details.to_owned()),
    };
    FredError::new(kind, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_failures_are_said_by_their_cause() {
        let refused = FredError::new(
            ErrorKind::IO,
            "Os { code: 111, kind: ConnectionRefused, message: \"Connection refused\" }",
        );
        assert_eq!(
            cause(&refused, false).details(),
            "cannot connect: connection refused"
        );
        let wrongpass = FredError::new(ErrorKind::Auth, "WRONGPASS invalid username-password pair");
        assert!(cause(&wrongpass, false).details().starts_with("WRONGPASS"));
        let silent = FredError::new(ErrorKind::Timeout, "Request timed out.");
        assert!(
            cause(&silent, true)
                .details()
                .starts_with("TLS handshake failed")
        );
        let http = FredError::new(
            ErrorKind::Protocol,
            "Decode Error: frame_type: Invalid frame type.",
        );
        assert!(cause(&http, false).details().starts_with("not Redis"));
        let reset = FredError::new(ErrorKind::IO, "Os { code: 104, kind: ConnectionReset }");
        assert!(cause(&reset, false).details().contains("use rediss://"));
    }

    #[tokio::test]
    async fn a_down_link_explains_timeouts_and_is_up_again_once_connected() {
        let (config, id) = crate::node::connection::parse_url("redis://127.0.0.1:1").unwrap();
        let client = crate::node::connection::client(config, Duration::from_millis(50));
        let link = Arc::new(Link::new(id, client, Duration::from_millis(50)));
        let timeout = FredError::new(ErrorKind::Timeout, "Request timed out.");
        assert!(link.down().is_none());
        assert_eq!(link.explain(timeout.clone()), timeout);
        link.set_down(FredError::new(ErrorKind::Auth, "WRONGPASS"), true);
        assert_eq!(link.explain(timeout.clone()).details(), "WRONGPASS");
        assert_eq!(link.down().unwrap().details(), "WRONGPASS");
        let wrongtype = FredError::new(ErrorKind::InvalidArgument, "WRONGTYPE");
        assert_eq!(link.explain(wrongtype.clone()), wrongtype);
        // Silence does not hide the connection's failure...
        link.stopped_answering();
        assert_eq!(link.down().unwrap().details(), "WRONGPASS");
        link.set_up();
        assert!(link.down().is_none());
        // ...and is the cause when there is none.
        link.stopped_answering();
        assert!(link.down().unwrap().details().starts_with("no answer"));
    }
}
