//! The hidden `__torture-hold` subcommand: the command that the torture's
//! exec holders run under `redquorum exec` (`exec_holder.rs`). It does what
//! every holder of the run does, a fenced read-modify-write of the
//! resource's counter in the protected store, with the token `exec` hands
//! it (`REDQUORUM_FENCE`), and tells the torture each step on its report
//! socket (`exec_lines.rs`). Only this process holds that socket, so the
//! torture sees it close when the process is gone.
//!
//! With `--kill-guard` it first SIGKILLs its parent, the guard `exec` runs it
//! under: `exec` must then kill it (it is `exec`'s orphan now) and leave the
//! lock to its TTL, never release while it may still write.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::getppid;
use redquorum_harness::ProtectedStore;

use super::exec_lines::{Line, monotonic_ns};

/// The hidden subcommand's name.
pub(crate) const SUBCOMMAND: &str = "__torture-hold";

/// Arguments of `__torture-hold` (the torture builds them).
#[derive(Debug, clap::Args)]
pub(crate) struct HoldArgs {
    /// `host:port` of the protected store.
    #[arg(long)]
    store: String,
    /// The Unix socket to report on.
    #[arg(long)]
    report: PathBuf,
    /// How long to hold between the read and the write.
    #[arg(long, value_parser = humantime::parse_duration)]
    hold: Duration,
    /// SIGKILL the guard first (the dead-man case).
    #[arg(long)]
    kill_guard: bool,
}

/// Runs the critical section; exits 0 unless the report socket or the
/// environment is missing (70).
pub(crate) fn run(args: &HoldArgs) -> ExitCode {
    let started = monotonic_ns();
    let (Ok(resource), Ok(owner)) = (
        std::env::var("REDQUORUM_RESOURCE"),
        std::env::var("REDQUORUM_OWNER"),
    ) else {
        stderr_line!(
            "redquorum {SUBCOMMAND}: not run by exec (no REDQUORUM_RESOURCE or REDQUORUM_OWNER)"
        );
        return crate::exit::SOFTWARE.into();
    };
    let fence = std::env::var("REDQUORUM_FENCE")
        .ok()
        .and_then(|f| f.parse().ok());
    let Ok(mut report) = UnixStream::connect(&args.report) else {
        return crate::exit::SOFTWARE.into();
    };
    // A closed socket (the torture gone) ends the run: nothing to tell.
    let mut tell = |line: Line| writeln!(report, "{}", line.format()).is_ok();
    if !tell(Line::Started {
        at: started,
        owner,
        fence,
    }) {
        return crate::exit::SOFTWARE.into();
    }
    if args.kill_guard {
        let _ = kill(getppid(), Signal::SIGKILL);
        tell(Line::GuardKilled { at: monotonic_ns() });
    }
    let store = ProtectedStore::new(&args.store);
    let value = match store.read_fenced_blocking(&resource, fence) {
        Ok(value) => value,
        Err(_) => {
            tell(Line::Failed { at: monotonic_ns() });
            return ExitCode::SUCCESS;
        }
    };
    tell(Line::Read {
        at: monotonic_ns(),
        value,
    });
    let Some(value) = value else {
        return ExitCode::SUCCESS;
    };
    // A heartbeat every 50 ms: if `exec` kills it meanwhile, the torture
    // knows it was only holding, not using the resource, until then.
    let until = std::time::Instant::now() + args.hold;
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        std::thread::sleep(left.min(Duration::from_millis(50)));
        if !tell(Line::Holding { at: monotonic_ns() }) {
            return ExitCode::SUCCESS;
        }
    }
    tell(Line::WriteStart {
        at: monotonic_ns(),
        value: value + 1,
    });
    match store.write_fenced_blocking(&resource, value + 1, fence) {
        Ok(accepted) => tell(Line::Wrote {
            at: monotonic_ns(),
            accepted,
        }),
        Err(_) => tell(Line::Failed { at: monotonic_ns() }),
    };
    ExitCode::SUCCESS
}
