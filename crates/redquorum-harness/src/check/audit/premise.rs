//! The premise rules (`audit/mod.rs` has them in a line each): what the
//! nodes must show while a client believes it holds, judged round by round
//! of the key audit. `unbacked.rs` is the hold's premise and the frame the
//! others share (`PremiseContext`, the rounds of a hold); `vote_backing.rs`
//! judges each counted vote, `token_backing.rs` each token against the
//! fence counters; `node_backing.rs` and `counter_shown.rs` are what a node
//! showed, for the violations' reports.

mod counter_shown;
mod node_backing;
pub(in crate::check) mod token_backing;
pub(in crate::check) mod unbacked;
pub(in crate::check) mod vote_backing;

pub use counter_shown::CounterShown;
pub use node_backing::NodeBacking;
