//! Starting the guarded command the way a program expects to start.

use std::ffi::{CString, OsString};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;

use nix::errno::Errno;
use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawnp};
use nix::sys::signal::{SigSet, Signal};
use nix::unistd::Pid;

/// Starts the command with an empty signal mask and SIGPIPE at its default
/// action, as a program expects to start (std's `Command` would pass on the
/// guard's blocked signals, and Rust ignores SIGPIPE); searched in `PATH`,
/// with the guard's environment, stdio and process group, without the
/// inherited stop-times pipe `stop_times_fd`.
pub(super) fn spawn(command: &[OsString], stop_times_fd: RawFd) -> Result<Pid, (OsString, Errno)> {
    let program = command.first().cloned().unwrap_or_default();
    let failed = |e| (program.clone(), e);
    let args = command
        .iter()
        .map(|arg| c_string(arg.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed)?;
    let env = std::env::vars_os()
        .map(|(name, value)| c_string(&[name.as_bytes(), b"=", value.as_bytes()].concat()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed)?;
    let mut attr = PosixSpawnAttr::init().map_err(failed)?;
    attr.set_sigmask(&SigSet::empty()).map_err(failed)?;
    let mut default = SigSet::empty();
    default.add(Signal::SIGPIPE);
    attr.set_sigdefault(&default).map_err(failed)?;
    attr.set_flags(
        PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
    )
    .map_err(failed)?;
    let mut actions = PosixSpawnFileActions::init().map_err(failed)?;
    actions.add_close(stop_times_fd).map_err(failed)?;
    let path = args.first().ok_or(Errno::ENOENT).map_err(failed)?;
    posix_spawnp(path, &actions, &attr, &args, &env).map_err(failed)
}

/// `bytes` as a C string; arguments from the command line never hold a NUL.
fn c_string(bytes: &[u8]) -> Result<CString, Errno> {
    CString::new(bytes).map_err(|_| Errno::EINVAL)
}
