//! Requests the nodes served (`INFO commandstats`) and the CPU they used (`INFO cpu`).

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
        let infos = self.info("commandstats").await?;
        Ok(infos.iter().map(|info| parse_calls(info, names)).sum())
    }

    /// The CPU all the nodes have used (user + system), in µs: the server
    /// side of a cycle, read before and after a run.
    ///
    /// # Errors
    ///
    /// The first node's error.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: it only reads.
    pub async fn cpu_us(&self) -> Result<f64, String> {
        let infos = self.info("cpu").await?;
        Ok(infos.iter().map(|info| parse_cpu_us(info)).sum())
    }

    /// `INFO <section>` of every node, in order.
    async fn info(&self, section: &'static str) -> Result<Vec<String>, String> {
        let mut infos = Vec::with_capacity(self.clients.len());
        for client in &self.clients {
            let info: String = client
                .custom(
                    CustomCommand::new_static("INFO", ClusterHash::FirstKey, false),
                    vec![section],
                )
                .await
                .map_err(|e| e.to_string())?;
            infos.push(info);
        }
        Ok(infos)
    }
}

/// The CPU a node has used, user and system, in µs (`INFO cpu`).
fn parse_cpu_us(info: &str) -> f64 {
    info.lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| *name == "used_cpu_user" || *name == "used_cpu_sys")
        .filter_map(|(_, seconds)| seconds.trim().parse::<f64>().ok())
        .sum::<f64>()
        * 1e6
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

    #[test]
    fn the_cpu_is_user_and_system_in_microseconds() {
        let info = "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:0.250000\r\n\
                    used_cpu_sys_children:9.000000\r\n";
        assert!((parse_cpu_us(info) - 1_750_000.0).abs() < 1.0);
    }
}
