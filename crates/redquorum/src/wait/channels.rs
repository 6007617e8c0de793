//! Subscribing one node's release channels: `SUBSCRIBE` on a single
//! server; on a cluster master (`redis-cluster://`) `SSUBSCRIBE`, one
//! channel at a time, on the shard that serves it. A cluster's lock script
//! publishes with `SPUBLISH` (node/script.rs), whose message stays in the
//! shard of the lock's slot, where a `PUBLISH` would cross the cluster bus
//! to every shard: the release's cost would grow with the shards.

use fred::clients::SubscriberClient;
use fred::error::Error as FredError;
use fred::interfaces::{ClientLike, PubsubInterface};

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
