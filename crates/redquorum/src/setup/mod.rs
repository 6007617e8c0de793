//! Building a `Redlock`: [`RedlockBuilder`] and its validation,
//! [`RedlockConfig`] (settings as data, deserialisable with the `serde`
//! feature), the `REDQUORUM_*` environment variables, the builder's node
//! sources (URLs or fred configs) and custom TLS trust roots. `build()` is
//! the one place that starts the nodes, the release notifications and the
//! coordinator and hands them to [`Redlock`](crate::Redlock).
//!
//! May import: `redlock/`, `quorum/`, `node/`, `wait/` (the notifier it
//! starts), `health/`, `protocol/` (the key prefix rule), and the root
//! vocabulary.
//!
//! Must never import: `kinds/`, `admin/`, `lease/`. Nothing imports this
//! but the crate root (the re-exports).

mod builder;
mod builder_nodes;
mod config;
mod env;
mod node_source;
mod tls;

pub use builder::RedlockBuilder;
pub use config::RedlockConfig;
