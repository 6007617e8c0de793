//! One file per subcommand (`cmd/<name>.rs`), with a folder of the same
//! name beside it for a command that needs more (`cmd/exec/`,
//! `cmd/status/`, `cmd/torture/`): the `foo.rs` + `foo/` layout throughout
//! the binary, no `mod.rs`.

pub(crate) mod bench;
pub(crate) mod common;
pub(crate) mod demo;
pub(crate) mod elect;
pub(crate) mod exec;
pub(crate) mod leader;
pub(crate) mod list;
pub(crate) mod min_hold;
#[cfg(redquorum_mutants)]
pub(crate) mod mutants;
pub(crate) mod nodes;
pub(crate) mod release;
pub(crate) mod serve;
pub(crate) mod status;
pub(crate) mod ticket;
pub(crate) mod torture;
