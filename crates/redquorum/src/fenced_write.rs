//! `FencedWriter`: the check a protected resource must make, for the common
//! case where that resource is itself a Redis key.
//!
//! A fencing token only helps if the resource refuses writes carrying a token
//! lower than one it has accepted. This does that atomically in one script:
//! "write if my token is at least the highest seen, and remember it".

use fred::interfaces::LuaInterface;
use fred::types::Value;

use crate::error::FencedWriteError;
use crate::node::script;
use crate::protocol::fence::FenceToken;

/// Writes to Redis keys guarded by a fence key that remembers the highest
/// [`FenceToken`] it has accepted.
///
/// Use one fence key per protected resource (all keys written under the same
/// lock share it). The client is the protected Redis, usually not one of the
/// lock nodes. A write with a token equal to the highest seen is accepted, so
/// one holder can write many times; a lower token is refused with
/// [`FencedWriteError::Stale`].
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// # let store_url = cluster.url(0);
/// use fred::prelude::*;
/// use redquorum::{FencedWriteError, FencedWriter, Redlock};
///
/// let redlock = Redlock::builder().nodes(cluster.urls()).build()?;
/// let store = Client::new(Config::from_url(&store_url)?, None, None, None);
/// store.init().await?;
/// let writer = FencedWriter::new("fence:accounts:7");
///
/// let old = redlock.lock("accounts:7").await?;
/// let old_token = old.fence().await?;
/// old.release().await?;
/// let new = redlock.lock("accounts:7").await?;
/// writer.set(&store, "accounts:7:balance", "100", new.fence().await?).await?;
///
/// // The earlier holder, waking up late, is refused.
/// let stale = writer.set(&store, "accounts:7:balance", "0", old_token).await;
/// assert!(matches!(stale, Err(FencedWriteError::Stale { .. })));
/// # new.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedWriter {
    fence_key: String,
}

impl FencedWriter {
    /// A writer whose highest accepted token lives at `fence_key`.
    ///
    /// # Examples
    ///
    /// ```
    /// let writer = redquorum::FencedWriter::new("fence:orders");
    /// assert_eq!(writer.fence_key(), "fence:orders");
    /// ```
    #[must_use]
    pub fn new(fence_key: impl Into<String>) -> Self {
        Self {
            fence_key: fence_key.into(),
        }
    }

    /// The key remembering the highest token accepted.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum::FencedWriter::new("f").fence_key(), "f");
    /// ```
    #[must_use]
    pub fn fence_key(&self) -> &str {
        &self.fence_key
    }

    /// `SET key value` if `token` is at least the highest token seen, and
    /// remember `token` as the highest: one atomic script.
    ///
    /// The write uses the client's own command timeout; a timed-out write may
    /// still have happened (the error says so only as a timeout).
    ///
    /// # Errors
    ///
    /// - [`FencedWriteError::Stale`]: a higher token was accepted before;
    ///   nothing was written.
    /// - [`FencedWriteError::Redis`]: the store failed or did not answer.
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe in the sense that a dropped call may still be applied
    /// by the store; it is then applied whole or not at all (one script).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(1)?;
    /// use fred::prelude::*;
    /// use redquorum::{FenceToken, FencedWriter};
    ///
    /// let store = Client::new(Config::from_url(&cluster.url(0))?, None, None, None);
    /// store.init().await?;
    /// let writer = FencedWriter::new("fence:report");
    /// writer.set(&store, "report", "v2", FenceToken::new(2)).await?;
    /// assert!(writer.set(&store, "report", "v1", FenceToken::new(1)).await.is_err());
    /// assert_eq!(store.get::<String, _>("report").await?, "v2");
    /// # Ok(()) }
    /// ```
    pub async fn set<C>(
        &self,
        client: &C,
        key: &str,
        value: &str,
        token: FenceToken,
    ) -> Result<(), FencedWriteError>
    where
        C: LuaInterface + Send + Sync,
    {
        let keys = vec![self.fence_key.clone(), key.to_owned()];
        let args = vec![Value::from(token.get().to_string()), Value::from(value)];
        let reply: Result<String, fred::error::Error> =
            script::eval_cached(&script::FENCED_WRITE, client, keys, args).await;
        let redis = |source| FencedWriteError::Redis {
            key: key.to_owned(),
            source,
        };
        let highest = reply.map_err(redis)?;
        let highest = highest.parse::<u64>().map_err(|_| {
            redis(fred::error::Error::new(
                fred::error::ErrorKind::Parse,
                format!(
                    "fence key {:?} holds {highest:?}, not a token",
                    self.fence_key
                ),
            ))
        })?;
        if highest == token.get() {
            Ok(())
        } else {
            Err(FencedWriteError::Stale {
                key: key.to_owned(),
                token,
                highest: FenceToken::new(highest),
            })
        }
    }
}
