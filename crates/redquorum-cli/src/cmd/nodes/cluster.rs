//! `redquorum nodes up --cluster S [--replicas R]`: each of the `-n`
//! masters a local Redis Cluster of S primaries (and R replicas each),
//! whose URL is `redis-cluster://...`. The processes are started like the
//! plain nodes (daemons with pid files, listed in the state file, so `down`
//! stops them alike); this file holds what differs: the layout, kept in the
//! state directory so a second `up` prints the same URLs, the ports each
//! master's processes take, the clusters formed by the harness, and their
//! export line.

use std::fs;
use std::net::TcpListener;
use std::path::Path;

use redquorum_harness::{ShardPorts, form_redis_cluster, redis_cluster_url};

use super::Failure;
use crate::exit;

/// The file in the state directory that holds the layout (`S R`); absent
/// for plain nodes.
const LAYOUT_FILE: &str = "cluster";
/// A cluster node's bus listens this far above its port (Redis's default).
const BUS_OFFSET: u16 = 10_000;

/// Each master's shape: S primaries, each with R replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) shards: u16,
    pub(super) replicas: u16,
}

impl Layout {
    /// How many processes one master takes.
    pub(super) fn processes(self) -> u16 {
        self.shards * (1 + self.replicas)
    }

    /// Refuses a last port whose cluster bus port (+10000) does not exist:
    /// that node could not start.
    pub(super) fn check_bus_range(last: u16) -> Result<(), Failure> {
        match last.checked_add(BUS_OFFSET) {
            Some(_) => Ok(()),
            None => Err(Failure::new(
                exit::USAGE,
                format!(
                    "--base-port too high for --cluster: a cluster node's bus port is its port \
                     + {BUS_OFFSET}, and {last} + {BUS_OFFSET} passes 65535"
                ),
            )),
        }
    }

    /// Refuses ports whose cluster bus ports are taken: a node whose bus
    /// cannot listen does not start.
    pub(super) fn check_bus_ports_free(ports: &[u16]) -> Result<(), Failure> {
        let taken = ports
            .iter()
            .filter_map(|p| p.checked_add(BUS_OFFSET))
            .find(|bus| TcpListener::bind(("127.0.0.1", *bus)).is_err());
        match taken {
            Some(bus) => Err(Failure::new(
                exit::UNAVAILABLE,
                format!(
                    "port {bus} (a cluster bus port: node port + {BUS_OFFSET}) is in use: \
                     pick other ports with --base-port"
                ),
            )),
            None => Ok(()),
        }
    }

    /// Master `master`'s shards among all the ports: each master takes
    /// `processes()` ports in a row, its primaries first, then their replicas.
    fn shards_of(self, ports: &[u16], master: usize) -> Vec<ShardPorts> {
        let (shards, per) = (usize::from(self.shards), usize::from(self.processes()));
        let block = &ports[master * per..(master + 1) * per];
        (0..shards)
            .map(|shard| ShardPorts {
                primary: block[shard],
                replica: (self.replicas > 0).then(|| block[shards + shard]),
            })
            .collect()
    }

    /// How many masters `ports` make.
    fn masters(self, ports: &[u16]) -> usize {
        ports.len() / usize::from(self.processes())
    }

    /// Makes each master's processes one cluster (slots, meet, replicas),
    /// side by side; returns once every cluster has settled.
    pub(super) fn form(self, ports: &[u16]) -> Result<(), Failure> {
        std::thread::scope(|scope| {
            let forming: Vec<_> = (0..self.masters(ports))
                .map(|m| scope.spawn(move || form_redis_cluster(m, &self.shards_of(ports, m))))
                .collect();
            forming.into_iter().try_for_each(|f| {
                f.join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))
                    .map_err(|e| Failure::new(exit::SOFTWARE, e.to_string()))
            })
        })
    }

    /// Each master's URL: its primaries as seeds.
    pub(super) fn urls(self, ports: &[u16]) -> Vec<String> {
        (0..self.masters(ports))
            .map(|m| {
                let primaries: Vec<u16> =
                    self.shards_of(ports, m).iter().map(|s| s.primary).collect();
                redis_cluster_url(&primaries)
            })
            .collect()
    }

    /// Remembers the layout in the state directory.
    pub(super) fn write(self, dir: &Path) -> Result<(), Failure> {
        let text = format!("{} {}\n", self.shards, self.replicas);
        fs::write(dir.join(LAYOUT_FILE), text).map_err(|e| {
            Failure::new(
                exit::SOFTWARE,
                format!("cannot write state in {}: {e}", dir.display()),
            )
        })
    }

    /// The layout `up` remembered, if it started clusters.
    pub(super) fn read(dir: &Path) -> Option<Self> {
        let text = fs::read_to_string(dir.join(LAYOUT_FILE)).ok()?;
        let mut numbers = text.split_whitespace().map(str::parse);
        match (numbers.next(), numbers.next()) {
            (Some(Ok(shards)), Some(Ok(replicas))) => Some(Self { shards, replicas }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_master_takes_its_ports_in_a_row_primaries_first() {
        let layout = Layout {
            shards: 2,
            replicas: 1,
        };
        let ports: Vec<u16> = (7301..7309).collect();
        assert_eq!(
            layout.shards_of(&ports, 1),
            [
                ShardPorts {
                    primary: 7305,
                    replica: Some(7307)
                },
                ShardPorts {
                    primary: 7306,
                    replica: Some(7308)
                },
            ]
        );
        assert_eq!(
            layout.urls(&ports),
            [
                "redis-cluster://127.0.0.1:7301?node=127.0.0.1:7302",
                "redis-cluster://127.0.0.1:7305?node=127.0.0.1:7306"
            ]
        );
    }

    #[test]
    fn the_layout_round_trips_through_the_state_dir() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Layout::read(dir.path()), None);
        let layout = Layout {
            shards: 3,
            replicas: 1,
        };
        assert!(layout.write(dir.path()).is_ok());
        assert_eq!(Layout::read(dir.path()), Some(layout));
    }
}
