//! One file per subcommand.

pub(crate) mod bench;
pub(crate) mod common;
pub(crate) mod demo;
pub(crate) mod exec;
pub(crate) mod min_hold;
#[cfg(feature = "mutants")]
pub(crate) mod mutants;
pub(crate) mod nodes;
pub(crate) mod status;
pub(crate) mod torture;
