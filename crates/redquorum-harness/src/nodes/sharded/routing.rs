//! Reaching a sharded master's keys: which primary owns a key now
//! ([`ShardedCluster::primary_for_key`]), one command sent there, following
//! the cluster's `MOVED` and `ASK` redirects
//! ([`ShardedCluster::command_for_key`]), and the keys of every primary
//! ([`ShardedCluster::keys`]).

use super::ShardedCluster;
use super::slots::slot_of;
use crate::error::HarnessError;
use crate::nodes::resp::{Reply, RespConn};

/// A command is redirected at most this often (a slot mid-migration takes
/// one `ASK`; a stale owner one `MOVED`).
const MAX_REDIRECTS: usize = 5;

impl ShardedCluster {
    /// The port of the primary that owns `key`'s slot now, as the harness
    /// keeps it: the slot is computed here ([`slot_of`]), and the harness
    /// moves every slot that moves ([`migrate_slot`](Self::migrate_slot),
    /// [`failover`](Self::failover)), each time waiting until every node
    /// agrees. While a slot is mid-migration this is still its source.
    ///
    /// # Panics
    ///
    /// If `master` is out of range.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 0).unwrap();
    /// // "foo" is in slot 12182, in the second half: shard 1
    /// assert_eq!(masters.primary_for_key(0, "foo"), masters.primary_port(0, 1));
    /// ```
    #[must_use]
    pub fn primary_for_key(&self, master: usize, key: &str) -> u16 {
        let shard = self.shard_of_slot(master, slot_of(key));
        self.primary_port(master, shard)
    }

    /// Runs `args` on the primary that owns `key`'s slot over a fresh
    /// connection, following `MOVED` (to the new owner) and `ASK` (with
    /// `ASKING`, to a migration's target) as a cluster client does.
    ///
    /// # Errors
    ///
    /// Connection or I/O failure, [`HarnessError::Command`] for any other
    /// error reply (its `node` is the process index in
    /// [`master`](Self::master)), or [`HarnessError::ClusterLayout`] for a
    /// bad master or too many redirects.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 0).unwrap();
    /// masters.command_for_key(0, "k", &["SET", "k", "v", "PX", "60000"]).unwrap();
    /// let value = masters.command_for_key(0, "k", &["GET", "k"]).unwrap();
    /// assert_eq!(value.as_text().as_deref(), Some("v"));
    /// ```
    pub fn command_for_key(
        &self,
        master: usize,
        key: &str,
        args: &[&str],
    ) -> Result<Reply, HarnessError> {
        let mut replies = self.commands_for_key(master, key, &[args])?;
        Ok(replies.pop().unwrap_or(Reply::Array(None)))
    }

    /// Runs `commands` one after the other on ONE connection to the primary
    /// that owns `key`'s slot (redirects followed as
    /// [`command_for_key`](Self::command_for_key) does, the connection then
    /// moving with them): for `WAIT`, which counts the replicas that have
    /// the writes made on its own connection.
    ///
    /// # Errors
    ///
    /// As [`command_for_key`](Self::command_for_key), for the first command that fails.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 1, 1).unwrap();
    /// let replies = masters
    ///     .commands_for_key(0, "k", &[&["SET", "k", "v"], &["WAIT", "1", "1000"]])
    ///     .unwrap();
    /// assert_eq!(replies[1].as_int(), Some(1), "the replica has the write");
    /// ```
    pub fn commands_for_key(
        &self,
        master: usize,
        key: &str,
        commands: &[&[&str]],
    ) -> Result<Vec<Reply>, HarnessError> {
        self.check_master(master)?;
        // The owner's connection, kept across commands; an ASK is answered
        // on a connection of its own, for that one command.
        let mut owner = self.primary_for_key(master, key);
        let mut owner_conn: Option<RespConn> = None;
        let mut replies = Vec::with_capacity(commands.len());
        for args in commands {
            let (mut port, mut asking) = (owner, false);
            let mut redirects = 0;
            let reply = loop {
                let node = self.process_of_port(master, port);
                let io = |source| HarnessError::Io {
                    node,
                    action: "command for key",
                    source,
                };
                let mut asked;
                let conn = if asking {
                    asked = RespConn::connect(port).map_err(io)?;
                    asked.command(&["ASKING"]).map_err(io)?;
                    &mut asked
                } else {
                    match &mut owner_conn {
                        Some(conn) => conn,
                        empty => empty.insert(RespConn::connect(port).map_err(io)?),
                    }
                };
                let message = match conn.command(args).map_err(io)? {
                    Reply::Error(message) => message,
                    reply => break reply,
                };
                let Some((ask, to)) = redirect(&message) else {
                    return Err(HarnessError::Command {
                        node,
                        command: args.first().copied().unwrap_or_default().to_owned(),
                        message,
                    });
                };
                if redirects == MAX_REDIRECTS {
                    return Err(HarnessError::ClusterLayout(format!(
                        "master {master}: key {key:?} redirected more than {MAX_REDIRECTS} times"
                    )));
                }
                redirects += 1;
                (port, asking) = (to, ask);
                if !ask {
                    // MOVED: the slot has a new owner for good.
                    owner = to;
                    owner_conn = None;
                }
            };
            replies.push(reply);
        }
        Ok(replies)
    }

    /// Keys matching `pattern` on every running primary of master `master`,
    /// with their PTTL in ms (−1: no expiry). A primary that is not running
    /// is skipped: its keys cannot be read.
    ///
    /// # Errors
    ///
    /// A bad master, connection failure, or a server error.
    ///
    /// # Examples
    ///
    /// ```
    /// let masters = redquorum_harness::ShardedCluster::start(1, 2, 0).unwrap();
    /// for key in ["lock:a", "lock:b", "lock:c", "other"] {
    ///     masters.command_for_key(0, key, &["SET", key, "1"]).unwrap();
    /// }
    /// let mut keys: Vec<String> = masters.keys(0, "lock:*").unwrap().into_iter().map(|(k, _)| k).collect();
    /// keys.sort();
    /// assert_eq!(keys, ["lock:a", "lock:b", "lock:c"]);
    /// ```
    pub fn keys(&self, master: usize, pattern: &str) -> Result<Vec<(String, i64)>, HarnessError> {
        self.check_master(master)?;
        let cluster = self.master(master);
        let mut found = Vec::new();
        for shard in 0..self.shards() {
            let index = self.primary_index(master, shard);
            if cluster.is_running(index) {
                found.extend(cluster.keys(index, pattern)?);
            }
        }
        Ok(found)
    }

    /// The index in master `master`'s cluster of the process on `port`
    /// (redirects name a port of the same cluster; 0 if none matches).
    pub(super) fn process_of_port(&self, master: usize, port: u16) -> usize {
        let cluster = self.master(master);
        (0..cluster.len())
            .find(|&i| cluster.port(i) == port)
            .unwrap_or(0)
    }
}

/// A redirect reply, `MOVED <slot> <host>:<port>` or `ASK <slot> <host>:<port>`,
/// as (is ASK, port).
fn redirect(message: &str) -> Option<(bool, u16)> {
    let mut words = message.split(' ');
    let ask = match words.next()? {
        "MOVED" => false,
        "ASK" => true,
        _ => return None,
    };
    let port = words.nth(1)?.rsplit_once(':')?.1.parse().ok()?;
    Some((ask, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_name_their_port() {
        assert_eq!(redirect("MOVED 3300 127.0.0.1:30002"), Some((false, 30002)));
        assert_eq!(redirect("ASK 3300 127.0.0.1:30002"), Some((true, 30002)));
        assert_eq!(redirect("ERR wrong number of arguments"), None);
        assert_eq!(redirect("MOVED 3300"), None);
    }
}
