//! Waiting for a lock: the one retry loop of every blocking acquire
//! (`retry.rs`) with its jittered backoff (`backoff.rs`), the lines of
//! local waiters per lock key (`waiters.rs`; each release counted once,
//! `recent.rs`), the first attempts of callers that start waiting together
//! (`first_try.rs`), and the release notifications that wake them
//! (`notify.rs`: one subscriber connection per node, shared by a `Redlock`
//! and its clones; `channels.rs`: subscribing on a single server or,
//! sharded, on a cluster master).
//!
//! May import: `protocol/` (lock keys and their channels, tokens), and the
//! root vocabulary (errors, options, metrics, `sync`).
//!
//! Must never import: `quorum/` (it imports this; the quorum size is handed
//! in by `setup/`), `node/` (the subscriber connections are handed in by
//! `setup/`), `lease/`, `redlock/`, `kinds/`.

mod backoff;
mod channels;
pub(crate) mod first_try;
pub(crate) mod notify;
mod recent;
pub(crate) mod retry;
mod waiters;
