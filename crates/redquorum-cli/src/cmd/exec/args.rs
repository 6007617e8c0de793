//! The options of `exec` and of every command that runs a command under a
//! lease.

use std::path::PathBuf;
use std::time::Duration;

use crate::arg_values;
use crate::guard;

/// The options of every command that runs a command under a lease (`exec`,
/// `elect`): the lease, when to stop the command, and how to reach the nodes.
#[derive(Debug, clap::Args)]
pub(crate) struct LeaseArgs {
    /// The lease on each node; the watchdog extends it when half of it is left.
    #[arg(long, default_value = "10s", value_parser = arg_values::positive_duration)]
    pub(super) ttl: Duration,
    /// Stop the command (SIGTERM) when less validity than this is left and no
    /// extension has succeeded; must be below half the TTL
    /// [default: a quarter of the TTL].
    #[arg(long, value_parser = arg_values::positive_duration)]
    pub(super) stop_margin: Option<Duration>,
    /// Time between SIGTERM and SIGKILL; with 100ms for the kill to land it
    /// must fit in the stop margin [default: half the stop margin].
    #[arg(long, value_parser = arg_values::duration)]
    pub(super) kill_after: Option<Duration>,
    /// The longest TTL any client locks with on these nodes: turns on the
    /// delayed-restart rule (a node that is not durable and has been up for
    /// less than this does not vote). Must be at least --ttl [default: off].
    #[arg(long, value_parser = arg_values::positive_duration)]
    pub(super) max_ttl: Option<Duration>,
    /// Trust this CA certificate (PEM or DER) for rediss:// nodes instead of
    /// the system's roots.
    #[arg(long, value_name = "FILE")]
    pub(super) tls_ca: Option<PathBuf>,
    /// The global `--quiet`/`-q` (main.rs): no redquorum messages on stderr
    /// except errors (a lock held elsewhere is not an error: it exits 75 silently).
    #[arg(skip)]
    pub(crate) quiet: bool,
    /// Prefix of the lock key on each node.
    #[arg(long, default_value = "lock:")]
    pub(super) key_prefix: String,
}

/// Options of `redquorum exec`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExecArgs {
    #[command(flatten)]
    pub(crate) lease: LeaseArgs,
    /// How long to keep trying to take the lock, e.g. 500ms, 10s, 2m
    /// [default: one attempt].
    #[arg(long, value_parser = arg_values::duration)]
    pub(super) wait: Option<Duration>,
    /// Take one of K permits of the semaphore RESOURCE instead of its lock:
    /// at most K commands run at once, across hosts [default: the lock].
    #[arg(long, short = 'n', value_name = "K", value_parser = arg_values::permits)]
    pub(super) permits: Option<usize>,
    /// Keep the lock (or permit) until this long after it was acquired,
    /// even when the command ends sooner (cron: one run per schedule window;
    /// docs/cli.md, `--min-hold`) [default: release when the command ends].
    #[arg(long, value_parser = arg_values::duration)]
    pub(super) min_hold: Option<Duration>,
    /// When someone asks for the lock (`redquorum release --ask`), send
    /// this signal (TERM, INT or HUP) to the command; if it has not ended
    /// --ask-grace later, stop it as when the lease is lost
    /// [default: asks are ignored]. Not with -n.
    #[arg(long, value_name = "SIGNAL", value_parser = arg_values::forwarded_signal, conflicts_with = "permits")]
    pub(super) on_ask: Option<nix::sys::signal::Signal>,
    /// How long a command asked to let go (--on-ask) may take to end.
    #[arg(long, default_value = "30s", value_parser = arg_values::duration, requires = "on_ask")]
    pub(super) ask_grace: Duration,
    /// Run under the lock of this lease ticket (`redquorum lock` printed it)
    /// instead of taking one: the hold moves to this `exec` (the ticket is
    /// then spent) and is released when the command ends. RESOURCE must be
    /// the ticket's. Not with -n or --wait.
    #[arg(long, value_name = "TICKET", conflicts_with_all = ["permits", "wait"])]
    pub(super) ticket: Option<String>,
    /// The resource to lock.
    #[arg(value_parser = arg_values::non_empty)]
    pub(super) resource: String,
    #[command(flatten)]
    pub(super) command: guard::CommandArgs,
}
