//! A cluster shard primary's replication id (`master_replid` of `INFO
//! replication`): the cluster form of the lock script appends it to every
//! answer, read in the same run as the operations it answers
//! (protocol/scripts/cluster_prelude.lua), and the shard's server reads it
//! once when it first connects.
//!
//! A slot map says who serves the slots now, not who served them in
//! between: a primary failed over away and back between two map reads is
//! the primary in both, yet its second promotion may have lost holds its
//! replacement granted. Every promotion gives the server a new replication
//! id. The server is told the id of each answer ([`TellReplicationId`])
//! before the answer is given, and the vote path looks at the server's
//! refusal after the answer (node/nodes.rs), so a vote given after a
//! promotion never counts unseen (health/eligibility.rs
//! `saw_replication_id`). Read in the script, the id costs no command of
//! its own and cannot be from another moment than the vote.

use std::sync::Arc;

use fred::clients::Client;
use fred::interfaces::ClientLike;
use fred::types::{ClusterHash, CustomCommand, Value};

/// What is told a replication id.
type Tell = dyn Fn(Option<&str>) + Send + Sync;

/// Told the replication id of each answer (`None`: the server could not
/// read it, `INFO` denied to the user).
#[derive(Clone)]
pub(crate) struct TellReplicationId(Arc<Tell>);

impl TellReplicationId {
    pub(crate) fn new(tell: impl Fn(Option<&str>) + Send + Sync + 'static) -> Self {
        Self(Arc::new(tell))
    }

    pub(crate) fn tell(&self, id: Option<&str>) {
        (self.0)(id);
    }
}

impl std::fmt::Debug for TellReplicationId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TellReplicationId")
    }
}

/// The server's replication id, asked with `INFO replication`; `None` when
/// it cannot be read.
pub(crate) async fn read(client: &Client) -> Option<String> {
    let command = CustomCommand::new_static("INFO", ClusterHash::Random, false);
    let info: Value = client.custom(command, vec!["replication"]).await.ok()?;
    parse(&info.as_str()?).map(str::to_owned)
}

/// A cluster-form answer's operations' answers, and the replication id the
/// script appended (`None` if empty: `INFO` denied). An answer that is not
/// an array is left whole (the decoder says what is wrong with it).
pub(crate) fn split(answer: Value) -> (Value, Option<String>) {
    match answer {
        Value::Array(mut answers) => {
            let id = answers.pop().and_then(|id| id.as_string());
            (Value::Array(answers), id.filter(|id| !id.is_empty()))
        }
        other => (other, None),
    }
}

/// `master_replid` of an `INFO replication` answer.
fn parse(info: &str) -> Option<&str> {
    info.lines()
        .find_map(|line| line.strip_prefix("master_replid:"))
        .map(str::trim)
        .filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_read_from_info_replication() {
        let info =
            "# Replication\r\nrole:master\r\nmaster_replid:9f52ad\r\nmaster_replid2:0000\r\n";
        assert_eq!(parse(info), Some("9f52ad"));
        assert_eq!(parse("# Replication\r\nrole:master\r\n"), None);
    }

    #[test]
    fn the_last_answer_is_the_id() {
        let answer = Value::Array(vec![Value::Integer(1), Value::from("9f52ad")]);
        let (answers, id) = split(answer);
        assert_eq!(answers, Value::Array(vec![Value::Integer(1)]));
        assert_eq!(id.as_deref(), Some("9f52ad"));
        let (_, id) = split(Value::Array(vec![Value::Integer(1), Value::from("")]));
        assert_eq!(id, None);
        let (whole, id) = split(Value::Null);
        assert_eq!((whole, id), (Value::Null, None));
    }
}
