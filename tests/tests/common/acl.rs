//! ACL users limited to what redquorum needs (docs/operations.md, "ACL
//! user"), on plain nodes (`tests/tests/acl.rs`) and TLS nodes
//! (`tests/tests/tls.rs`).

use redquorum_harness::{Cluster, HarnessError, Reply, TlsCluster};

/// The commands a redquorum user needs (docs/operations.md, "ACL user").
pub const LOCKER_COMMANDS: &[&str] = &[
    "-@all",
    "+evalsha",
    "+eval",
    "+script|load",
    "+hgetall",
    "+hset",
    "+hdel",
    "+del",
    "+pexpire",
    "+pttl",
    "+get",
    "+set",
    "+time",
    "+ping",
];

/// Nodes that take the harness's own commands as the default user: a plain
/// [`Cluster`], or a [`TlsCluster`] (over its plain port).
pub trait AsDefaultUser {
    /// How many nodes.
    fn nodes(&self) -> usize;
    /// Runs one command on node `index` as the default user.
    fn as_default_user(&self, index: usize, args: &[&str]) -> Result<Reply, HarnessError>;
}

impl AsDefaultUser for Cluster {
    fn nodes(&self) -> usize {
        self.len()
    }
    fn as_default_user(&self, index: usize, args: &[&str]) -> Result<Reply, HarnessError> {
        self.command(index, args)
    }
}

impl AsDefaultUser for TlsCluster {
    fn nodes(&self) -> usize {
        self.len()
    }
    fn as_default_user(&self, index: usize, args: &[&str]) -> Result<Reply, HarnessError> {
        self.command(index, args)
    }
}

/// Creates `user` with `password` on every node, allowed `commands` on `lock:*` keys only.
pub fn create_user(nodes: &impl AsDefaultUser, user: &str, password: &str, commands: &[&str]) {
    let pass = format!(">{password}");
    let mut args = vec![
        "ACL",
        "SETUSER",
        user,
        "reset",
        "on",
        pass.as_str(),
        "~lock:*",
    ];
    args.extend_from_slice(commands);
    for i in 0..nodes.nodes() {
        nodes.as_default_user(i, &args).expect("ACL SETUSER");
    }
}
