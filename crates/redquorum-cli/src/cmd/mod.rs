//! One file per subcommand.

pub(crate) mod bench;
pub(crate) mod common;
pub(crate) mod demo;
pub(crate) mod elect;
pub(crate) mod exec;
pub(crate) mod leader;
pub(crate) mod list;
pub(crate) mod min_hold;
#[cfg(feature = "mutants")]
pub(crate) mod mutants;
pub(crate) mod nodes;
pub(crate) mod release;
pub(crate) mod status;
pub(crate) mod torture;
