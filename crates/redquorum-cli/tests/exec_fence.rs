//! `redquorum exec` hands its command a fencing token; a token round that
//! too few nodes took (a timeout under load, a node refusing for a moment)
//! leaves the lock held, so `exec` asks again while the lease lasts rather
//! than giving up on a lock it holds.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{BIN, cluster, eventually, urls_as, wait_within};
use redquorum_harness::Cluster;

/// How many times node `index` refused `command` (its ACL log).
fn denials(nodes: &Cluster, index: usize, command: &str) -> i64 {
    let log = nodes.acl_denials(index).unwrap_or_default();
    log.iter()
        .filter(|d| d.object == command)
        .map(|d| d.count)
        .sum()
}

#[test]
fn a_token_round_a_quorum_refused_is_asked_again_and_the_command_gets_its_token() {
    let nodes = cluster(5);
    let urls = urls_as(&nodes, "fencer");
    // Three of five refuse the token's write-back: its first write (the
    // DEL that turns the plain record into one that can note a token)
    // fails, so nothing is written. The plain acquire before it deletes
    // nothing. The first round has no quorum; the lock is still held.
    for node in 2..5 {
        nodes
            .command(node, &["ACL", "SETUSER", "fencer", "-del"])
            .unwrap();
    }
    let mut exec = Command::new(BIN)
        .env_remove("REDQUORUM_NODES")
        .args(["--nodes", &urls, "exec", "--ttl", "10s", "fenced", "--"])
        .args(["sh", "-c", "echo \"token=$REDQUORUM_FENCE\""])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn redquorum");
    // Once every refusing node has refused a write-back, they take it again.
    let refused = eventually(Duration::from_secs(30), || {
        (2..5).all(|node| denials(&nodes, node, "del") > 0)
    });
    for node in 2..5 {
        nodes
            .command(node, &["ACL", "SETUSER", "fencer", "+del"])
            .unwrap();
    }
    assert!(refused, "the write-back was never refused");

    let status = wait_within(&mut exec, Duration::from_secs(60));
    let mut stdout = String::new();
    exec.stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(status.success(), "exec gave up on a lock it held: {status}");
    let token = stdout.trim().strip_prefix("token=").unwrap_or_default();
    assert!(token.parse::<u64>().is_ok(), "no token given: {stdout:?}");
}
