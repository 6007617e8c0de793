//! A cluster master's slot map: read at the first call, every
//! health-probe interval and when woken (a redirection, a shard down); the
//! shard servers brought in line with it (node/cluster.rs).

use std::sync::Arc;

use fred::interfaces::ClientLike;
use fred::prelude::{Config, ServerConfig};
use fred::types::{ClusterHash, CustomCommand, Value};
use tokio::task::JoinHandle;

use super::{ClusterMaster, Shard};
use crate::health::ineligible::Ineligible;
use crate::node::connection;
use crate::node::script;
use crate::node::server::Server;
use crate::node::slots::{Address, SlotTable};
use crate::node_id::NodeId;

impl ClusterMaster {
    /// Reads the first slot map at the first call, then every probe
    /// interval and at once when woken, until the cluster master is gone.
    /// The first read runs here, not in a caller's task, so no caller can
    /// cut it short (cluster/first_map.rs).
    pub(crate) fn spawn_refresher(self: &Arc<Self>) -> JoinHandle<()> {
        let master = Arc::downgrade(self);
        let interval = self.settings.interval;
        let first = Arc::clone(self);
        tokio::spawn(async move {
            first.first_map.requested().await;
            first.refresh(true).await;
            first.first_map.end(|op| first.send(op));
            drop(first);
            loop {
                let Some(this) = master.upgrade() else { return };
                tokio::select! {
                    () = this.wake.notified() => {}
                    () = tokio::time::sleep(interval) => {}
                }
                this.refresh(false).await;
            }
        })
    }

    /// Starts the first read (the refresher reads the slot map and
    /// connects every primary) and waits for it to end; whether a map was read.
    pub(crate) async fn first_connect(&self) -> bool {
        self.first_map.request();
        self.first_map.ended().await;
        self.read().table.is_some()
    }

    /// Reads the slot map and brings the shard servers in line with it:
    /// a new primary gets a server (refused for the longest lease unless
    /// this is the first map, read at the first call: `first_read`), a
    /// server that no longer serves slots is closed once its calls have
    /// ended. A map read after a first read that failed is not a first
    /// map: the cluster may have failed over since the client started.
    pub(super) async fn refresh(&self, first_read: bool) {
        let _one = self.refreshing.lock().await;
        let Some(table) = self.read_map().await else {
            return;
        };
        if table.uncovered() > 0 {
            tracing::warn!(node = %self.id, uncovered = table.uncovered(), "cluster slots served by no primary: operations on them fail");
        }
        let earlier = self.read().table.clone();
        let first = first_read && earlier.is_none();
        let known: Vec<Address> = self.read().shards.keys().cloned().collect();
        let added: Vec<(Address, Shard)> = table
            .primaries()
            .iter()
            .filter(|address| !known.contains(address))
            .map(|address| (address.clone(), self.start_shard(address)))
            .collect();
        // Every new primary at once: a map's shards are as quick to reach as one.
        let reached =
            futures::future::join_all(added.iter().map(|(_, shard)| shard.server.first_connect()))
                .await;
        for ((_, shard), up) in added.iter().zip(reached) {
            if !up {
                tracing::warn!(node = %self.id, shard = %shard.server.id(), "cluster shard primary not reachable");
            }
            if !first {
                tracing::warn!(node = %self.id, shard = %shard.server.id(), "a new primary serves slots of the cluster (failover?): its votes are refused for the longest lease");
                shard.server.became_primary(self.settings.clock_rule.1);
            }
        }
        if let Some(earlier) = &earlier {
            self.taint_takers(earlier, &table);
        }
        let retired: Vec<Shard> = {
            let mut topology = self.write();
            topology.shards.extend(added);
            let gone: Vec<Address> = topology
                .shards
                .keys()
                .filter(|address| !table.primaries().contains(address))
                .cloned()
                .collect();
            topology.table = Some(table);
            gone.iter()
                .filter_map(|address| topology.shards.remove(address))
                .collect()
        };
        for shard in retired {
            tracing::info!(node = %self.id, shard = %shard.server.id(), "server no longer a primary of the cluster: closed");
            let timeout = self.settings.node_timeout;
            tokio::spawn(async move {
                let _ = tokio::time::timeout(timeout, shard.server.drained()).await;
                shard.server.quit().await;
                shard.stop();
            });
        }
        self.maps_read.send_modify(|count| *count += 1);
    }

    /// A server for the primary at `address`, connecting.
    fn start_shard(&self, address: &Address) -> Shard {
        let server = Arc::new(Server::new(
            self.config_for(address),
            NodeId::new(&address.0, address.1),
            &self.settings,
            &script::OPS_CLUSTER,
        ));
        let (connection, tasks) = server.start();
        Shard {
            server,
            connection,
            tasks,
        }
    }

    /// A known primary that took slots from a server that is gone (a
    /// failover we did not see happen) or that is itself refused as a new
    /// primary (the slots may lack its predecessor's holds, and a migration
    /// carries that loss along) is refused for the longest lease too.
    fn taint_takers(&self, earlier: &SlotTable, table: &SlotTable) {
        let topology = self.read();
        let is_new_primary = |address: &Address| {
            topology.shards.get(address).is_some_and(|shard| {
                matches!(shard.server.refusal(), Some(Ineligible::NewPrimary { .. }))
            })
        };
        for (from, to) in table.moves_from(earlier) {
            let from_lost = !table.primaries().contains(from) || is_new_primary(from);
            if let (true, Some(taker)) = (from_lost, topology.shards.get(to)) {
                tracing::warn!(node = %self.id, shard = %taker.server.id(), from = %format!("{}:{}", from.0, from.1), "a primary took slots from a failed-over server: its votes are refused for the longest lease");
                taker.server.became_primary(self.settings.clock_rule.1);
            }
        }
    }

    /// `CLUSTER SLOTS` from a known primary that is up, else from a seed.
    async fn read_map(&self) -> Option<SlotTable> {
        let known: Vec<(Address, Arc<Server>)> = self
            .read()
            .shards
            .iter()
            .filter(|(_, shard)| shard.server.down().is_none())
            .map(|(address, shard)| (address.clone(), Arc::clone(&shard.server)))
            .collect();
        for (address, server) in known {
            if let Some(table) = ask_slots(server.client(), &address).await {
                self.remember(&table);
                return Some(table);
            }
        }
        let seeds = crate::sync::lock(&self.seeds).clone();
        for seed in &seeds {
            let client = connection::client(self.config_for(seed), self.settings.node_timeout);
            // fred retries a refused connection forever: bounded here.
            let connect_timeout = connection::connect_timeout(self.settings.node_timeout);
            let connection = client.connect();
            let up = tokio::time::timeout(connect_timeout, connection::wait_connected(&client))
                .await
                .unwrap_or(false);
            let table = if up {
                ask_slots(&client, seed).await
            } else {
                None
            };
            if up {
                let _ = client.quit().await;
            }
            connection.abort();
            if let Some(table) = table {
                self.remember(&table);
                return Some(table);
            }
        }
        tracing::warn!(node = %self.id, "no server of the cluster answered CLUSTER SLOTS");
        None
    }

    /// Keeps every server `table` names as a place to ask for later maps.
    fn remember(&self, table: &SlotTable) {
        let mut seeds = crate::sync::lock(&self.seeds);
        for address in table.primaries().iter().chain(table.replicas()) {
            if !seeds.contains(address) {
                seeds.push(address.clone());
            }
        }
    }

    /// The template's connection settings, aimed at `address`.
    pub(super) fn config_for(&self, address: &Address) -> Config {
        Config {
            server: ServerConfig::new_centralized(address.0.clone(), address.1),
            ..self.template.clone()
        }
    }
}

/// `CLUSTER SLOTS` asked of `client` (the server at `address`).
async fn ask_slots(client: &fred::clients::Client, address: &Address) -> Option<SlotTable> {
    let command = CustomCommand::new_static("CLUSTER", ClusterHash::Random, false);
    let answer: Value = client.custom(command, vec!["SLOTS"]).await.ok()?;
    match SlotTable::parse(answer, address) {
        Ok(table) if table.primaries().is_empty() => None,
        Ok(table) => Some(table),
        Err(reason) => {
            tracing::debug!(%reason, "unreadable CLUSTER SLOTS");
            None
        }
    }
}
