//! The N masters: one master, a single server or a Redis Cluster
//! (`master.rs`); one server's client and state (`server.rs`); a cluster
//! master's shards and slot routing (`cluster.rs`; its slot map reads in
//! `cluster/map.rs`, its releases that follow redirections in
//! `cluster/redirect.rs`; the pure slot map in `slots.rs`); the set of masters with their background tasks and the
//! vote rules that span nodes (`nodes.rs`), connecting with lock-safe fred settings
//! (`connection.rs`; what fred leaves unchecked in a node URL,
//! `url_check.rs`), whether a node is up or down and why (`link.rs`),
//! group commit (`batch/`: the batcher over its queue), the script cache (`script.rs`), and the health
//! probes that read what a node says about itself (`probe.rs`). Every
//! byte to or from a lock node goes through here.
//!
//! May import: `health/` (the probes' results and which votes count),
//! `protocol/` (an operation as data), and the root
//! vocabulary (outcomes, errors at build time, metrics, ids, `sync`,
//! `mutants`).
//!
//! Must never import: `quorum/` (it imports this; the quorum size is handed
//! in by `setup/`), `wait/`, `lease/`, `redlock/`, `kinds/`: a node runs
//! operations, it does not decide them. Inside, `batch/` imports only
//! `link.rs` and `script.rs` of this folder; `server.rs` imports it.

mod batch;
pub(crate) mod cluster;
pub(crate) mod connection;
mod link;
pub(crate) mod master;
pub(crate) mod nodes;
mod probe;
pub(crate) mod script;
pub(crate) mod server;
mod slots;
mod url_check;
