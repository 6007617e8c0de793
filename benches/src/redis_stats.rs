//! Requests the nodes served, from `INFO commandstats`.

use fred::clients::Client;
use fred::interfaces::ClientLike;
use fred::prelude::Config;
use fred::types::{ClusterHash, CustomCommand};

/// One plain client per node, used only to read counters between runs.
#[derive(Debug)]
pub struct CommandStats {
    clients: Vec<Client>,
}

impl CommandStats {
    /// Connects to every node.
    ///
    /// # Errors
    ///
    /// A message naming the node that could not be reached.
    ///
    /// # Cancel safety
    ///
    /// Dropping it drops the half-made clients.
    pub async fn connect(urls: &[String]) -> Result<Self, String> {
        let mut clients = Vec::new();
        for url in urls {
            let client = Client::new(
                Config::from_url(url).map_err(|e| e.to_string())?,
                None,
                None,
                None,
            );
            client
                .init()
                .await
                .map_err(|e| format!("{}: {e}", crate::locker::redact(url)))?;
            clients.push(client);
        }
        Ok(Self { clients })
    }

    /// Calls of each command summed over every node, for the commands in `names`.
    ///
    /// # Errors
    ///
    /// The first node's error.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn calls(&self, names: &[&str]) -> Result<u64, String> {
        let mut total = 0;
        for client in &self.clients {
            let info: String = client
                .custom(
                    CustomCommand::new_static("INFO", ClusterHash::FirstKey, false),
                    vec!["commandstats"],
                )
                .await
                .map_err(|e| e.to_string())?;
            total += parse_calls(&info, names);
        }
        Ok(total)
    }
}

/// Sums `calls=` of the `cmdstat_<name>` lines whose name is in `names`.
fn parse_calls(info: &str, names: &[&str]) -> u64 {
    info.lines()
        .filter_map(|line| line.strip_prefix("cmdstat_"))
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| names.contains(name))
        .filter_map(|(_, fields)| fields.split(',').find_map(|f| f.strip_prefix("calls=")))
        .filter_map(|calls| calls.parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_only_the_named_commands() {
        let info = "# Commandstats\r\ncmdstat_evalsha:calls=10,usec=5,usec_per_call=0.5\r\n\
                    cmdstat_get:calls=7,usec=1\r\ncmdstat_set:calls=3,usec=1\r\n";
        assert_eq!(parse_calls(info, &["evalsha", "set"]), 13);
        assert_eq!(parse_calls(info, &["del"]), 0);
    }
}
