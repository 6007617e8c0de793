//! What was published on a lock's release channels, heard by a connection
//! of the test's own. Counting a node's PUBLISH calls would not tell: every
//! Redlock's channel-permission probe publishes too, aside and at its own
//! time.

use std::time::Duration;

use fred::prelude::*;

/// A connection of the test's own that hears every message on the release
/// channels of one lock key (`redquorum:released:<key>` and its suffixed
/// forms).
pub struct Listener {
    client: fred::clients::SubscriberClient,
    messages: tokio::sync::broadcast::Receiver<fred::types::Message>,
    marker: String,
}

impl Listener {
    /// Listens on node `url` for messages about lock `key`; returns once
    /// the server has taken the subscriptions.
    pub async fn on(url: &str, key: &str) -> Self {
        let config = Config::from_url(url).expect("node url");
        let client = fred::clients::SubscriberClient::new(config, None, None, None);
        client.init().await.expect("connect the listener");
        let messages = client.message_rx();
        let marker = format!("test:marker:{key}");
        client
            .psubscribe(format!("redquorum:released:{key}*"))
            .await
            .expect("PSUBSCRIBE");
        client.subscribe(&marker).await.expect("SUBSCRIBE");
        let mut listener = Self {
            client,
            messages,
            marker,
        };
        // fred answers a subscription when it is sent; the marker coming
        // back shows the server has taken both.
        listener.until_marker().await;
        listener
    }

    /// The channels of every message heard so far: exact, since a server
    /// delivers one connection's messages in order, and the marker published
    /// now comes after all of them.
    pub async fn messages(mut self) -> Vec<String> {
        let heard = self.until_marker().await;
        let _ = self.client.quit().await;
        heard
    }

    /// Publishes the marker and collects the other channels' messages until
    /// it comes back.
    async fn until_marker(&mut self) -> Vec<String> {
        let publisher = self.client.clone_new();
        publisher.init().await.expect("connect the publisher");
        let _: i64 = publisher.publish(&self.marker, "").await.expect("PUBLISH");
        let mut heard = Vec::new();
        let listening = async {
            while let Ok(message) = self.messages.recv().await {
                let channel = message.channel.to_string();
                if channel == self.marker {
                    return;
                }
                heard.push(channel);
            }
        };
        tokio::time::timeout(Duration::from_secs(20), listening)
            .await
            .expect("the marker came back");
        let _ = publisher.quit().await;
        heard
    }
}
