//! One file per subcommand (`cmd/<name>.rs`), with a folder of the same
//! name beside it for a command that needs more (`cmd/exec/`,
//! `cmd/status/`, `cmd/torture/`), and a folder for the commands of one
//! concern (`cmd/election/`: `elect`, `leader`; `cmd/operator/`: `list`,
//! `release`): the `foo.rs` + `foo/` layout throughout the binary, no
//! `mod.rs`.

pub(crate) mod bench;
pub(crate) mod common;
pub(crate) mod demo;
pub(crate) mod election;
pub(crate) mod exec;
#[cfg(redquorum_mutants)]
pub(crate) mod mutants;
pub(crate) mod nodes;
pub(crate) mod operator;
pub(crate) mod serve;
pub(crate) mod status;
pub(crate) mod ticket;
pub(crate) mod torture;
