//! What a node's ACL log says it refused (`ACL LOG`): tests that make a
//! node refuse a command or a channel wait on it to know the refusal
//! happened, instead of sleeping.

use super::cluster::Cluster;
use super::resp::Reply;
use crate::error::HarnessError;

/// One entry of a node's ACL log: refusals alike are counted in one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclDenial {
    /// Why: `command`, `key`, `channel` or `auth`.
    pub reason: String,
    /// What was refused: the command's name (`hset`), or the key or channel.
    pub object: String,
    /// How many times alike.
    pub count: i64,
}

impl Cluster {
    /// Node `index`'s ACL log, newest first.
    ///
    /// # Errors
    ///
    /// Connection failure, or the node refusing `ACL LOG`.
    ///
    /// # Examples
    ///
    /// ```
    /// let cluster = redquorum_harness::Cluster::start(1).unwrap();
    /// cluster.command(0, &["ACL", "SETUSER", "u", "on", ">pw", "~*", "+@all", "-hset"]).unwrap();
    /// let mut as_u = redquorum_harness::RespConn::connect(cluster.port(0)).unwrap();
    /// as_u.command(&["AUTH", "u", "pw"]).unwrap();
    /// as_u.command(&["HSET", "h", "f", "v"]).unwrap();
    /// let denials = cluster.acl_denials(0).unwrap();
    /// assert_eq!((denials[0].reason.as_str(), denials[0].object.as_str()), ("command", "hset"));
    /// ```
    pub fn acl_denials(&self, index: usize) -> Result<Vec<AclDenial>, HarnessError> {
        let Reply::Array(Some(entries)) = self.command(index, &["ACL", "LOG"])? else {
            return Ok(Vec::new());
        };
        Ok(entries.iter().filter_map(denial).collect())
    }
}

/// An entry's fields, from its flat name-value array.
fn denial(entry: &Reply) -> Option<AclDenial> {
    let Reply::Array(Some(fields)) = entry else {
        return None;
    };
    let field = |name: &str| {
        let at = fields
            .iter()
            .position(|f| f.as_text().as_deref() == Some(name))?;
        fields.get(at + 1)
    };
    Some(AclDenial {
        reason: field("reason")?.as_text()?,
        object: field("object")?.as_text()?,
        count: field("count")?.as_int()?,
    })
}
