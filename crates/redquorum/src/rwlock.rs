//! The read-write lock: many readers or one writer per resource, on the quorum.
//!
//! On each node a resource has three keys: `<key>:readers`, a sorted set of
//! reader tokens scored by their own expiry (node time, purged by every
//! script, so a crashed reader's hold ends after its ttl), `<key>:writer`
//! (the writer's token, PX ttl), and `<key>:intent` (a waiting writer's
//! token, PX ttl). Intent refuses new readers, so a writer waiting behind a
//! stream of readers gets in once the current ones drain.
//!
//! A read asked while the same task holds the write lock is **refused**
//! (contended): each lock has its own token and there is no owner identity
//! across them, so re-entry would have to trust the caller. Take only the
//! write lock if you need both.

use std::sync::Arc;

use fred::types::Value;

use crate::error::Error;
use crate::fence;
use crate::held::{self, Held};
use crate::quorum::{NodeCall, UnwindOn};
use crate::redlock::Redlock;
use crate::scripts;
use crate::token::OwnerToken;

/// The three keys of one resource's read-write lock on every node, and its fence key.
struct Keys {
    readers: String,
    writer: String,
    intent: String,
    /// The resource's fencing counter, shared with the other kinds on the same name.
    fence: String,
}

impl Keys {
    fn new(redlock: &Redlock, resource: &str) -> Self {
        let base = redlock.key(resource);
        Self {
            readers: format!("{base}:readers"),
            writer: format!("{base}:writer"),
            intent: format!("{base}:intent"),
            fence: fence::fence_key(&base),
        }
    }

    fn all(&self) -> Vec<String> {
        vec![
            self.readers.clone(),
            self.writer.clone(),
            self.intent.clone(),
        ]
    }

    /// Owner-checked delete of our writer key; `with_intent` also drops our intent.
    fn write_release(&self, token: OwnerToken, with_intent: bool) -> NodeCall {
        held::script_call(
            &scripts::RW_WRITE_RELEASE,
            vec![self.writer.clone(), self.intent.clone()],
            vec![
                Value::from(token.to_string()),
                Value::from(if with_intent { "1" } else { "0" }),
            ],
        )
    }
}

impl Redlock {
    /// Makes one attempt to take `resource` for reading (shared) on a quorum.
    ///
    /// # Errors
    ///
    /// - [`Error::Contended`]: a writer holds it or waits for it on enough nodes.
    /// - [`Error::Unavailable`], [`Error::Expired`], [`Error::EmptyResource`],
    ///   as for [`Redlock::try_lock`]; the reader was unwound on every node.
    /// - [`Error::FenceUnavailable`]: the fencing token could not be stored
    ///   on a quorum (fencing is on); the reader was released.
    ///
    /// # Cancel safety
    ///
    /// As [`Redlock::try_lock`]: a dropped attempt is unwound in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let a = redlock.try_read_lock("catalog").await?;
    /// let b = redlock.try_read_lock("catalog").await?; // readers share
    /// assert!(redlock.try_write_lock("catalog").await.is_err());
    /// a.release().await?;
    /// b.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_read_lock(&self, resource: &str) -> Result<ReadLock, Error> {
        if resource.is_empty() {
            return Err(Error::EmptyResource);
        }
        let keys = Keys::new(self, resource);
        let owner = OwnerToken::random();
        let token = Value::from(owner.to_string());
        let ttl = self.options().ttl;
        let acquire = held::script_call(
            &scripts::RW_READ_ACQUIRE,
            keys.all(),
            vec![token.clone(), held::millis(ttl)],
        );
        let release = held::script_call(
            &scripts::RW_READ_RELEASE,
            vec![keys.readers.clone()],
            vec![token.clone()],
        );
        let extend = held::script_call(
            &scripts::RW_READ_EXTEND,
            vec![keys.readers],
            vec![token, held::millis(ttl)],
        );
        let quorum = self.shared_quorum();
        let lease = quorum
            .acquire_with(
                resource,
                ttl,
                acquire,
                Arc::clone(&release),
                UnwindOn::NotTaken,
            )
            .await?;
        let held = Held::new(self, resource, owner, lease.deadline, extend, release)
            .fenced(self.options().fencing, &keys.fence)
            .await?;
        Ok(ReadLock { held })
    }

    /// Takes `resource` for reading, retrying until the handle's `wait` runs out.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] with the last attempt's error, or [`Error::EmptyResource`].
    ///
    /// # Cancel safety
    ///
    /// As [`try_read_lock`](Self::try_read_lock).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let read = redlock.read_lock("catalog").await?;
    /// read.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn read_lock(&self, resource: &str) -> Result<ReadLock, Error> {
        held::retry(self.options(), resource, || self.try_read_lock(resource)).await
    }

    /// Makes one attempt to take `resource` for writing (exclusive) on a quorum.
    ///
    /// A failed attempt leaves nothing behind, not even writer intent: only
    /// [`write_lock`](Self::write_lock), which keeps trying, holds readers back.
    ///
    /// # Errors
    ///
    /// - [`Error::Contended`]: readers, another writer, or another writer's
    ///   intent hold it on enough nodes.
    /// - [`Error::Unavailable`], [`Error::Expired`], [`Error::EmptyResource`],
    ///   as for [`Redlock::try_lock`].
    /// - [`Error::FenceUnavailable`]: the fencing token could not be stored
    ///   on a quorum (fencing is on); the write lock was released.
    ///
    /// # Cancel safety
    ///
    /// As [`Redlock::try_lock`]: a dropped attempt is unwound in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let write = redlock.try_write_lock("catalog").await?;
    /// assert!(redlock.try_read_lock("catalog").await.is_err());
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_write_lock(&self, resource: &str) -> Result<WriteLock, Error> {
        if resource.is_empty() {
            return Err(Error::EmptyResource);
        }
        self.write_attempt(resource, OwnerToken::random(), true)
            .await
    }

    /// Takes `resource` for writing, retrying until the handle's `wait` runs out.
    ///
    /// Between attempts its intent stays on the nodes where readers held it,
    /// so new readers are refused and the writer is not starved. Giving up
    /// (or dropping the future) removes the intent.
    ///
    /// # Errors
    ///
    /// [`Error::WaitTimeout`] with the last attempt's error, or [`Error::EmptyResource`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe in effect: a dropped call unwinds its attempt and removes
    /// its intent in the background.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let write = redlock.write_lock("catalog").await?;
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn write_lock(&self, resource: &str) -> Result<WriteLock, Error> {
        if resource.is_empty() {
            return Err(Error::EmptyResource);
        }
        // One token for every attempt, so the intent recorded by one attempt
        // lets the next one in.
        let token = OwnerToken::random();
        let clear = Keys::new(self, resource).write_release(token, true);
        let quorum = self.shared_quorum();
        let mut guard = IntentGuard {
            quorum: Some(Arc::clone(quorum)),
            clear: Arc::clone(&clear),
        };
        let result = held::retry(self.options(), resource, || {
            self.write_attempt(resource, token, false)
        })
        .await;
        guard.quorum = None;
        if result.is_err() {
            let _ = quorum.release_with(resource, clear).await;
        }
        result
    }

    async fn write_attempt(
        &self,
        resource: &str,
        token: OwnerToken,
        drop_intent_on_failure: bool,
    ) -> Result<WriteLock, Error> {
        let keys = Keys::new(self, resource);
        let ttl = self.options().ttl;
        let acquire = held::script_call(
            &scripts::RW_WRITE_ACQUIRE,
            keys.all(),
            vec![Value::from(token.to_string()), held::millis(ttl)],
        );
        let unwind = keys.write_release(token, drop_intent_on_failure);
        // The write script records our intent even where it answers "taken":
        // a one-shot attempt clears it on every node; a waiting writer keeps it
        // there between attempts (so readers cannot starve it).
        let unwind_on = if drop_intent_on_failure {
            UnwindOn::Every
        } else {
            UnwindOn::NotTaken
        };
        let extend = held::script_call(
            &scripts::RW_WRITE_EXTEND,
            vec![keys.writer.clone()],
            vec![Value::from(token.to_string()), held::millis(ttl)],
        );
        let quorum = self.shared_quorum();
        let lease = quorum
            .acquire_with(resource, ttl, acquire, unwind, unwind_on)
            .await?;
        let release = keys.write_release(token, true);
        let held = Held::new(self, resource, token, lease.deadline, extend, release)
            .fenced(self.options().fencing, &keys.fence)
            .await?;
        Ok(WriteLock { held })
    }
}

/// Removes a waiting writer's intent if `write_lock` is dropped mid-wait.
struct IntentGuard {
    quorum: Option<Arc<crate::quorum::Quorum>>,
    clear: NodeCall,
}

impl Drop for IntentGuard {
    fn drop(&mut self) {
        if let Some(quorum) = self.quorum.take() {
            quorum.spawn_on_all(Arc::clone(&self.clear));
        }
    }
}

/// A shared (read) hold on a resource, valid until [`deadline`](Self::deadline).
///
/// Other readers may hold it at the same time; no writer can. Dropping it
/// releases in the background. [`auto_extend`](Self::auto_extend),
/// [`lease`](Self::lease) and [`lost`](Self::lost) work as on [`crate::Lock`].
///
/// **Fencing.** Readers do not exclude each other, so a reader's
/// [`fence`](Self::fence) token orders it against **writers only**: it is
/// greater than the token of every write lock granted before the read was
/// asked for, and lower than the token of every write lock asked for after
/// it was granted. Between concurrent readers it orders nothing useful; a
/// resource must not refuse one reader because another reader's token is higher.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let read = redlock.read_lock("prices").await?;
/// assert_eq!(read.resource(), "prices");
/// read.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a ReadLock releases it at once"]
pub struct ReadLock {
    held: Held,
}

held::held_accessors!(ReadLock);

impl ReadLock {
    /// Renews this reader's own expiry on a quorum and returns the new validity.
    ///
    /// # Errors
    ///
    /// [`Error::NotHeld`] (this reader expired), [`Error::Unavailable`] or
    /// [`Error::Expired`], as [`crate::Lock::extend`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the old deadline stands.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let mut read = redlock.read_lock("prices").await?;
    /// assert!(read.extend().await? > std::time::Duration::from_secs(9));
    /// read.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn extend(&mut self) -> Result<std::time::Duration, Error> {
        self.held.extend().await
    }

    /// Removes this reader on every node; returns on how many nodes it was removed.
    ///
    /// # Errors
    ///
    /// [`Error::NotHeld`] or [`Error::Unavailable`], as [`crate::Lock::release`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if dropped mid-way, `Drop` sends the removal again.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let read = redlock.read_lock("prices").await?;
    /// assert_eq!(read.release().await?, 3);
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<usize, Error> {
        self.held.release().await
    }
}

/// The exclusive (write) hold on a resource, valid until [`deadline`](Self::deadline).
///
/// No reader and no other writer can hold it meanwhile. Dropping it
/// releases in the background. [`auto_extend`](Self::auto_extend),
/// [`lease`](Self::lease) and [`lost`](Self::lost) work as on [`crate::Lock`].
///
/// **Fencing.** Its [`fence`](Self::fence) token is greater than the token
/// of every lock on this resource name (write, read, plain or reentrant: they
/// share one counter) granted before this one was asked for.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let cluster = redquorum_harness::Cluster::start(3)?;
/// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
/// let write = redlock.write_lock("prices").await?;
/// assert!(write.is_valid());
/// write.release().await?;
/// # Ok(()) }
/// ```
#[must_use = "dropping a WriteLock releases it at once"]
pub struct WriteLock {
    held: Held,
}

held::held_accessors!(WriteLock);

impl WriteLock {
    /// Renews the write lock on a quorum (owner-checked) and returns the new validity.
    ///
    /// # Errors
    ///
    /// [`Error::NotHeld`], [`Error::Unavailable`] or [`Error::Expired`], as [`crate::Lock::extend`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: the old deadline stands.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let mut write = redlock.write_lock("prices").await?;
    /// assert!(write.extend().await? > std::time::Duration::from_secs(9));
    /// write.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn extend(&mut self) -> Result<std::time::Duration, Error> {
        self.held.extend().await
    }

    /// Deletes the writer key (owner-checked) on every node; returns on how many nodes.
    ///
    /// # Errors
    ///
    /// [`Error::NotHeld`] or [`Error::Unavailable`], as [`crate::Lock::release`].
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: if dropped mid-way, `Drop` sends the release again.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let cluster = redquorum_harness::Cluster::start(3)?;
    /// let redlock = redquorum::Redlock::builder().nodes(cluster.urls()).build()?;
    /// let write = redlock.write_lock("prices").await?;
    /// assert_eq!(write.release().await?, 3);
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<usize, Error> {
        self.held.release().await
    }
}

#[cfg(test)]
mod tests {
    fn is_send_sync_static<T: Send + Sync + 'static>() {}
    fn is_send<T: Send>(_: &T) {}

    #[test]
    fn bounds() {
        is_send_sync_static::<super::ReadLock>();
        is_send_sync_static::<super::WriteLock>();
    }

    #[allow(dead_code, unused_must_use)]
    async fn futures_are_send(
        redlock: crate::Redlock,
        mut r: super::ReadLock,
        mut w: super::WriteLock,
    ) {
        is_send(&redlock.try_read_lock("r"));
        is_send(&redlock.read_lock("r"));
        is_send(&redlock.try_write_lock("r"));
        is_send(&redlock.write_lock("r"));
        is_send(&r.extend());
        is_send(&w.extend());
        is_send(&r.lost());
        is_send(&w.lost());
        is_send(&r.release());
        is_send(&w.release());
    }
}
