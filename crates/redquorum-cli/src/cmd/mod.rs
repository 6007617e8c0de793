//! One file per subcommand.

pub(crate) mod bench;
pub(crate) mod demo;
