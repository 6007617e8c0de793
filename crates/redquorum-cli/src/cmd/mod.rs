//! One file per subcommand.

pub(crate) mod demo;
pub(crate) mod torture;
