//! The protected store: one counter per resource in a Redis the faults do
//! not touch, read and written by the holders (a read-modify-write, so two
//! holders at once lose an update). With fencing, every access carries the
//! holder's fencing token and the store refuses a token below the highest
//! it has seen on that resource, reads included (a fenced read raises it,
//! so a stale holder cannot write over a value a newer holder has read).

use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

use crate::nodes::{Reply, RespConn};

/// A fenced read: `{1, value}`, or `{0}` when a higher token was seen.
const FENCED_READ_LUA: &str = r"
local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[1]) < seen then return {0} end
redis.call('SET', KEYS[2], ARGV[1])
return {1, redis.call('GET', KEYS[1]) or '0'}
";

/// A fenced write: 1, or 0 when a higher token was seen.
const FENCED_WRITE_LUA: &str = r"
local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[1]) < seen then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
return 1
";

/// The protected values: one counter per resource in a Redis the faults do not touch.
///
/// # Examples
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store_node = redquorum_harness::Cluster::start(1)?;
/// let store = redquorum_harness::ProtectedStore::new(&store_node.host_port(0));
/// store.write_blocking("r", 3)?;
/// assert_eq!(store.read_blocking("r")?, 3);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ProtectedStore {
    addr: String,
    /// Idle connections, reused: a long run would otherwise open (and leave
    /// in TIME_WAIT) two connections per session.
    idle: std::sync::Arc<std::sync::Mutex<Vec<RespConn>>>,
}

impl ProtectedStore {
    /// A store on the Redis at `host:port`.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = redquorum_harness::ProtectedStore::new("127.0.0.1:6379");
    /// ```
    #[must_use]
    pub fn new(addr: &str) -> Self {
        Self {
            addr: addr.to_owned(),
            idle: std::sync::Arc::default(),
        }
    }

    /// The store's `host:port`, for a holder in another process.
    ///
    /// # Examples
    ///
    /// ```
    /// let store = redquorum_harness::ProtectedStore::new("127.0.0.1:6379");
    /// assert_eq!(store.addr(), "127.0.0.1:6379");
    /// ```
    #[must_use]
    pub fn addr(&self) -> &str {
        &self.addr
    }

    fn key(resource: &str) -> String {
        format!("protected:{resource}")
    }

    fn fence_key(resource: &str) -> String {
        format!("protected:{resource}:fence")
    }

    /// Runs one command on an idle connection (or a new one); the
    /// connection goes back to the pool only after a clean reply.
    fn command(&self, args: &[&str]) -> io::Result<Reply> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => RespConn::connect_addr(&self.addr, Duration::from_secs(2))?,
        };
        let reply = conn.command(args)?;
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(conn);
        Ok(reply)
    }

    /// Reads `resource`'s counter (0 when unset).
    ///
    /// # Errors
    ///
    /// I/O errors or a non-integer value.
    ///
    /// # Examples
    ///
    /// ```
    /// # let node = redquorum_harness::Cluster::start(1).unwrap();
    /// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
    /// assert_eq!(store.read_blocking("fresh").unwrap(), 0);
    /// ```
    pub fn read_blocking(&self, resource: &str) -> io::Result<i64> {
        let reply = self.command(&["GET", &Self::key(resource)])?;
        match reply.as_text() {
            None => Ok(0),
            Some(text) => text
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, text)),
        }
    }

    /// Writes `resource`'s counter.
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # let node = redquorum_harness::Cluster::start(1).unwrap();
    /// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
    /// store.write_blocking("r", 1).unwrap();
    /// ```
    pub fn write_blocking(&self, resource: &str, value: i64) -> io::Result<()> {
        self.command(&["SET", &Self::key(resource), &value.to_string()])
            .map(drop)
    }

    /// Every resource's counter.
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # let node = redquorum_harness::Cluster::start(1).unwrap();
    /// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
    /// let values = store.values(&["a".to_owned()]).unwrap();
    /// assert_eq!(values["a"], 0);
    /// ```
    pub fn values(&self, resources: &[String]) -> io::Result<BTreeMap<String, i64>> {
        resources
            .iter()
            .map(|r| Ok((r.clone(), self.read_blocking(r)?)))
            .collect()
    }

    /// Reads `resource`'s counter; with a fence, only if no higher token was
    /// seen there (`None`: refused), raising the store's token to it.
    ///
    /// # Errors
    ///
    /// I/O errors or a non-integer value.
    ///
    /// # Examples
    ///
    /// ```
    /// # let node = redquorum_harness::Cluster::start(1).unwrap();
    /// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
    /// assert_eq!(store.read_fenced_blocking("r", Some(5)).unwrap(), Some(0));
    /// assert_eq!(store.read_fenced_blocking("r", Some(4)).unwrap(), None);
    /// ```
    pub fn read_fenced_blocking(
        &self,
        resource: &str,
        fence: Option<u64>,
    ) -> io::Result<Option<i64>> {
        let Some(fence) = fence else {
            return self.read_blocking(resource).map(Some);
        };
        let (key, fence_key) = (Self::key(resource), Self::fence_key(resource));
        let reply = self.command(&[
            "EVAL",
            FENCED_READ_LUA,
            "2",
            &key,
            &fence_key,
            &fence.to_string(),
        ])?;
        let Reply::Array(Some(parts)) = reply else {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "fenced read"));
        };
        if parts.first().and_then(Reply::as_int) != Some(1) {
            return Ok(None);
        }
        let text = parts.get(1).and_then(Reply::as_text).unwrap_or_default();
        text.parse()
            .map(Some)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, text))
    }

    /// Writes `resource`'s counter; with a fence, only if no higher token was
    /// seen there. Returns whether the write was accepted.
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # let node = redquorum_harness::Cluster::start(1).unwrap();
    /// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
    /// assert!(store.write_fenced_blocking("r", 1, Some(9)).unwrap());
    /// assert!(!store.write_fenced_blocking("r", 2, Some(8)).unwrap());
    /// assert_eq!(store.read_blocking("r").unwrap(), 1);
    /// ```
    pub fn write_fenced_blocking(
        &self,
        resource: &str,
        value: i64,
        fence: Option<u64>,
    ) -> io::Result<bool> {
        let Some(fence) = fence else {
            return self.write_blocking(resource, value).map(|()| true);
        };
        let (key, fence_key) = (Self::key(resource), Self::fence_key(resource));
        let reply = self.command(&[
            "EVAL",
            FENCED_WRITE_LUA,
            "2",
            &key,
            &fence_key,
            &fence.to_string(),
            &value.to_string(),
        ])?;
        Ok(reply.as_int() == Some(1))
    }

    /// Starts `resource` over: counter 0, no token seen.
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```
    /// # let node = redquorum_harness::Cluster::start(1).unwrap();
    /// let store = redquorum_harness::ProtectedStore::new(&node.host_port(0));
    /// store.reset_blocking("r").unwrap();
    /// ```
    pub fn reset_blocking(&self, resource: &str) -> io::Result<()> {
        self.write_blocking(resource, 0)?;
        self.command(&["DEL", &Self::fence_key(resource)]).map(drop)
    }

    pub(crate) async fn read(&self, resource: &str, fence: Option<u64>) -> io::Result<Option<i64>> {
        let (store, resource) = (self.clone(), resource.to_owned());
        tokio::task::spawn_blocking(move || store.read_fenced_blocking(&resource, fence))
            .await
            .map_err(io::Error::other)?
    }

    pub(crate) async fn write(
        &self,
        resource: &str,
        value: i64,
        fence: Option<u64>,
    ) -> io::Result<bool> {
        let (store, resource) = (self.clone(), resource.to_owned());
        tokio::task::spawn_blocking(move || store.write_fenced_blocking(&resource, value, fence))
            .await
            .map_err(io::Error::other)?
    }
}
