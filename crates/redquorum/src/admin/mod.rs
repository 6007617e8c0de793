//! Operator calls on a `Redlock`: who holds a resource as each node sees
//! it ([`Redlock::inspect`](crate::Redlock::inspect), read-only), and the
//! resources held under a prefix and their forced release
//! ([`Redlock::list`](crate::Redlock::list),
//! [`Redlock::force_release`](crate::Redlock::force_release)), and asking
//! a lock's holders to let go ([`Redlock::ask_release`](crate::Redlock::ask_release),
//! `ask.rs`). For tools such as `redquorum status`: none of this takes or
//! holds a lock.
//!
//! May import: `redlock/`, `quorum/` (the quorum arithmetic:
//! `tally.rs`), `protocol/` (the keys, the inspect and force-release
//! operations), and the root vocabulary.
//!
//! Must never import: `kinds/` (it imports this: a `Leader` is read from an
//! inspection), `setup/`, `lease/` (no hold here), `node/` directly.

mod ask;
mod hold_view;
pub(crate) mod inspect;
mod operator;

pub use inspect::{HoldView, Inspection, NodeView};
