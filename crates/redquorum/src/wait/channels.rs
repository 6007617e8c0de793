//! Subscribing one node's release channels: `SUBSCRIBE` on a single
//! server; on a cluster master (`redis-cluster://`) `SSUBSCRIBE`, one
//! channel at a time, on the shard that serves it. A cluster's lock script
//! publishes with `SPUBLISH` (node/script.rs), whose message stays in the
//! shard of the lock's slot, where a `PUBLISH` would cross the cluster bus
//! to every shard: the release's cost would grow with the shards.
//!
//! And finding, once per node, whether the node lets this user use the
//! release channels at all ([`warn_if_refused`]).

use fred::clients::{Client, SubscriberClient};
use fred::error::{Error as FredError, ErrorKind};
use fred::interfaces::{ClientLike, PubsubInterface};
use fred::types::config::Config;

use crate::protocol::keys::CHANNEL_PREFIX;

/// The channel of the permission probe: a name no lock key has (lock keys
/// end with `}`), so nobody listens to it.
const PROBE: &str = "permissions-probe";

/// Subscribes `channels` on `subscriber`'s node.
pub(crate) async fn subscribe(
    subscriber: &SubscriberClient,
    channels: Vec<String>,
) -> Result<(), FredError> {
    if !subscriber.is_clustered() {
        return subscriber.subscribe(channels).await;
    }
    // A channel's slot is its lock's (the same hash tag); one call per
    // channel, since two channels may be served by two shards.
    let calls = channels
        .into_iter()
        .map(|channel| async move { subscriber.ssubscribe(channel).await });
    futures::future::join_all(calls).await.into_iter().collect()
}

/// Unsubscribes `channel` on `subscriber`'s node.
pub(crate) async fn unsubscribe(
    subscriber: &SubscriberClient,
    channel: String,
) -> Result<(), FredError> {
    if subscriber.is_clustered() {
        subscriber.sunsubscribe(channel).await
    } else {
        subscriber.unsubscribe(channel).await
    }
}

/// Whether `subscriber` keeps `channel` subscribed across reconnections.
pub(crate) fn is_tracked(subscriber: &SubscriberClient, channel: &str) -> bool {
    let tracked = if subscriber.is_clustered() {
        subscriber.tracked_shard_channels()
    } else {
        subscriber.tracked_channels()
    };
    tracked.iter().any(|t| &t[..] == channel)
}

/// Warns, naming the node, when its server refuses this user the release
/// channels (an ACL user without channel permissions: the Redis 7 default
/// `acl-pubsub-default resetchannels`; or without the commands). Waiters
/// there then retry by their backoff, and a watchdog hears of a loss only
/// at its next extension.
///
/// fred cannot tell: it answers a `SUBSCRIBE` as done when sent, and the
/// server's refusal that follows becomes the answer of whatever the
/// subscriber connection sends next. So the probe is a `PUBLISH` on a
/// channel nobody listens to (the same channel permission governs both),
/// on a connection of its own, as `subscriber`'s user, closed after. Not
/// on a cluster master, whose channels are sharded per lock.
pub(crate) async fn warn_if_refused(subscriber: &SubscriberClient) {
    if subscriber.is_clustered() {
        return;
    }
    // Once: a failed connect ends the probe (the subscriber's own config
    // reconnects forever); its timeouts bound the connect, the handshake
    // and the command, so the probe ends by itself and never lingers.
    let config = Config {
        fail_fast: true,
        ..subscriber.client_config()
    };
    let (performance, connection) = (subscriber.perf_config(), subscriber.connection_config());
    let probe = Client::new(config, Some(performance), Some(connection.clone()), None);
    if probe.init().await.is_err() {
        // Not reachable now: the node's health says so, and a waiter that
        // comes later probes no more (the subscription is tried anyway).
        return;
    }
    let channel = format!("{CHANNEL_PREFIX}{PROBE}");
    let answer = probe.publish::<i64, _, _>(channel, "").await;
    let _ = probe.quit().await;
    if let Some(error) = refusal(answer) {
        let node = subscriber.client_config().server.hosts();
        let node = node.first().map(ToString::to_string).unwrap_or_default();
        tracing::warn!(
            node = %node,
            error = %error,
            "node refuses the release channels: waiters there retry by their backoff, and a lost lease is noticed at its next extension (docs/operations.md, ACL user)"
        );
    }
}

/// The server's refusal in `answer`, if it is one (not a connection's
/// failure, which the node's health reports and a reconnection may mend).
fn refusal<T>(answer: Result<T, FredError>) -> Option<FredError> {
    let error = answer.err()?;
    let failed = matches!(
        error.kind(),
        ErrorKind::IO | ErrorKind::Timeout | ErrorKind::Canceled | ErrorKind::Backpressure
    );
    (!failed).then_some(error)
}
