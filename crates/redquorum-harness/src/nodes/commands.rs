//! Faults and reads sent to a node as commands, on local and external
//! nodes alike: the whole server asleep (`DEBUG SLEEP`), clients paused
//! (`CLIENT PAUSE`), the script cache emptied, lock keys forgotten, the
//! clock jumped forward as far as the keys can tell (a TTL shift), and
//! the keys listed with their TTLs.

use std::time::Duration;

use super::cluster::Cluster;
use super::resp::Reply;
use super::server::clock::TTL_SHIFT_LUA;
use crate::error::HarnessError;

impl Cluster {
    /// Blocks node `index`'s whole server for `duration` with `DEBUG SLEEP`;
    /// returns once the command is sent (the node is then asleep).
    ///
    /// # Errors
    ///
    /// Connection failure, or a server refusing DEBUG (external nodes may).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.debug_sleep(0, Duration::from_millis(300)).unwrap();
    /// let start = Instant::now();
    /// cluster.command(0, &["PING"]).unwrap();
    /// assert!(start.elapsed() >= Duration::from_millis(100));
    /// ```
    pub fn debug_sleep(&self, index: usize, duration: Duration) -> Result<(), HarnessError> {
        let mut conn = self.conn(index)?;
        let seconds = format!("{:.3}", duration.as_secs_f64());
        // Send now, read the reply on a thread: the caller returns while the node sleeps.
        conn.send(&["DEBUG", "SLEEP", &seconds])
            .map_err(|source| HarnessError::Io {
                node: index,
                action: "send DEBUG SLEEP",
                source,
            })?;
        std::thread::spawn(move || {
            let _ = conn.read(duration + Duration::from_secs(5));
        });
        // The server runs the command on its next loop turn; a PING on another
        // connection would race it, so give it a moment to start sleeping.
        std::thread::sleep(Duration::from_millis(20).min(duration));
        Ok(())
    }

    /// `CLIENT PAUSE` on node `index` for `duration`: only writes, or all commands.
    ///
    /// # Errors
    ///
    /// Connection failure or a server error.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.client_pause(0, std::time::Duration::from_secs(5), true).unwrap();
    /// cluster.client_unpause(0).unwrap();
    /// cluster.command(0, &["SET", "k", "1"]).unwrap();
    /// ```
    pub fn client_pause(
        &self,
        index: usize,
        duration: Duration,
        writes_only: bool,
    ) -> Result<(), HarnessError> {
        let millis = duration.as_millis().to_string();
        let mode = if writes_only { "WRITE" } else { "ALL" };
        self.command(index, &["CLIENT", "PAUSE", &millis, mode])
            .map(drop)
    }

    /// Ends a [`client_pause`](Self::client_pause) early.
    ///
    /// # Errors
    ///
    /// Connection failure or a server error.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.client_unpause(0).unwrap();
    /// ```
    pub fn client_unpause(&self, index: usize) -> Result<(), HarnessError> {
        self.command(index, &["CLIENT", "UNPAUSE"]).map(drop)
    }

    /// Empties node `index`'s script cache (`SCRIPT FLUSH`): the next
    /// EVALSHA there answers NOSCRIPT.
    ///
    /// # Errors
    ///
    /// Connection failure.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.flush_scripts(0).unwrap();
    /// ```
    pub fn flush_scripts(&self, index: usize) -> Result<(), HarnessError> {
        self.command(index, &["SCRIPT", "FLUSH"]).map(drop)
    }

    /// Deletes every key matching `pattern` on node `index`: the node forgets
    /// the locks it granted (outside Redlock's assumptions). Returns how many.
    ///
    /// # Errors
    ///
    /// Connection failure or a script error.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.command(0, &["SET", "lock:a", "x"]).unwrap();
    /// assert_eq!(cluster.forget_keys(0, "lock:*").unwrap(), 1);
    /// ```
    pub fn forget_keys(&self, index: usize, pattern: &str) -> Result<i64, HarnessError> {
        let script = "local n = 0 local c = '0' repeat local p = redis.call('SCAN', c, 'MATCH', ARGV[1], 'COUNT', 1000) c = p[1] for _, k in ipairs(p[2]) do redis.call('DEL', k) n = n + 1 end until c == '0' return n";
        Ok(self
            .command(index, &["EVAL", script, "0", pattern])?
            .as_int()
            .unwrap_or(0))
    }

    /// Jumps node `index`'s clock forward by `delta` as far as keys matching
    /// `pattern` are concerned: each TTL shrinks by `delta` (keys with less left
    /// are deleted), and in the library's lock records (hashes) each hold's
    /// expiry moves `delta` earlier. Works on any Redis, no process control
    /// needed. Returns how many keys it touched.
    ///
    /// # Errors
    ///
    /// Connection failure or a script error.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.command(0, &["SET", "lock:a", "x", "PX", "10000"]).unwrap();
    /// assert_eq!(cluster.clock_jump(0, Duration::from_secs(9), "lock:*").unwrap(), 1);
    /// let pttl = cluster.command(0, &["PTTL", "lock:a"]).unwrap().as_int().unwrap();
    /// assert!(pttl <= 1000);
    /// ```
    pub fn clock_jump(
        &self,
        index: usize,
        delta: Duration,
        pattern: &str,
    ) -> Result<usize, HarnessError> {
        let millis = delta.as_millis().to_string();
        let reply = self.command(index, &["EVAL", TTL_SHIFT_LUA, "0", &millis, pattern])?;
        Ok(reply
            .as_int()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0))
    }

    /// Keys matching `pattern` on node `index`, with their PTTL in ms (−1: no expiry).
    ///
    /// # Errors
    ///
    /// Connection failure or a server error.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.command(0, &["SET", "lock:a", "x", "PX", "10000"]).unwrap();
    /// let keys = cluster.keys(0, "lock:*").unwrap();
    /// assert_eq!(keys.len(), 1);
    /// assert_eq!(keys[0].0, "lock:a");
    /// ```
    pub fn keys(&self, index: usize, pattern: &str) -> Result<Vec<(String, i64)>, HarnessError> {
        let mut conn = self.conn(index)?;
        let io = |source| HarnessError::Io {
            node: index,
            action: "scan keys",
            source,
        };
        let mut cursor = "0".to_owned();
        let mut found = Vec::new();
        // Bounded: a SCAN over a test node's keyspace ends long before this.
        for _ in 0..100_000 {
            let reply = conn
                .command(&["SCAN", &cursor, "MATCH", pattern, "COUNT", "1000"])
                .map_err(io)?;
            let Reply::Array(Some(parts)) = reply else {
                break;
            };
            cursor = parts.first().and_then(Reply::as_text).unwrap_or_default();
            if let Some(Reply::Array(Some(keys))) = parts.get(1) {
                for key in keys.iter().filter_map(Reply::as_text) {
                    let pttl = conn
                        .command(&["PTTL", &key])
                        .map_err(io)?
                        .as_int()
                        .unwrap_or(-2);
                    if pttl != -2 {
                        found.push((key, pttl));
                    }
                }
            }
            if cursor == "0" || cursor.is_empty() {
                break;
            }
        }
        Ok(found)
    }
}
