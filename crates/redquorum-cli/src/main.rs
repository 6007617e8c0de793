//! `redquorum`: distributed locks from the shell, local dev nodes, and the demo.
//!
//! This file only parses arguments and dispatches; each command lives in `cmd/`.

#![forbid(unsafe_code)]
// `eprintln!` panics on a closed stderr: every message goes through `stderr_line!`.
#![deny(clippy::print_stderr)]

// First, so that `stderr_line!` is in scope in every module below.
#[macro_use]
mod stderr;

mod arg_values;
mod cmd;
mod exit;
mod fence_retry;
mod guard;
mod interrupt;
mod nodes_arg;
mod progress;
mod serve_child;
mod stop_times;
mod subtree;
mod verbosity;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

/// Distributed locks on N independent Redis masters (Redlock).
#[derive(Debug, Parser)]
#[command(name = "redquorum", version, about)]
struct Cli {
    /// Redis masters, comma-separated: `redis://[user:pass@]host:port,...`
    /// (a Redis Cluster as one master: `redis-cluster://host:port[?node=host:port]`)
    #[arg(
        long,
        global = true,
        env = "REDQUORUM_NODES",
        value_delimiter = ',',
        hide_env_values = true
    )]
    nodes: Vec<String>,
    /// Only errors on stderr: no progress bars, no library warnings, and
    /// for `exec` none of its own messages that are not errors.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// More of the library's logs on stderr: -v a line per acquire,
    /// extension and release, -vv debug (each node's answer), -vvv trace.
    /// Default: warnings.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// A flash sale on local nodes: locks keep 0 oversold while a master is killed.
    Demo(cmd::demo::DemoArgs),
    /// Run a command while holding a lock (a distributed flock), or with -n K one of K permits: redquorum exec [-n K] RESOURCE -- CMD [ARGS...]
    Exec(cmd::exec::ExecArgs),
    /// Campaign to lead an election, then run a command while leader: redquorum elect NAME -- CMD [ARGS...]
    Elect(cmd::election::elect::ElectArgs),
    /// Show who leads an election, once or (--watch) as it changes.
    Leader(cmd::election::leader::LeaderArgs),
    /// Take a lock, print its lease ticket and exit, leaving it held for --ttl: redquorum lock NAME --ttl D
    Lock(cmd::ticket::LockArgs),
    /// Renew the lock of a lease ticket (from `redquorum lock`) and print the ticket again.
    Extend(cmd::ticket::ExtendArgs),
    /// Release the lock of a lease ticket (from `redquorum lock`).
    Unlock(cmd::ticket::TicketArgs),
    /// Serve the locks over HTTP (JSON, bearer tokens): redquorum serve --listen ADDR (docs/serve.md)
    Serve(cmd::serve::ServeArgs),
    /// Force-release a resource whoever holds it, and raise its fence counter (needs --force).
    Release(cmd::operator::release::ReleaseArgs),
    /// List the resources held under a name prefix.
    List(cmd::operator::list::ListArgs),
    /// Show who holds a resource's lock on each node, the time left, and each node's health.
    Status(cmd::status::StatusArgs),
    /// Start or stop local redis-server nodes for development.
    Nodes(cmd::nodes::NodesArgs),
    /// Run clients against the nodes under random faults and check mutual exclusion.
    Torture(Box<cmd::torture::TortureArgs>),
    /// Measure lock throughput, latency and hand-off on the nodes (see docs/performance.md).
    Bench(cmd::bench::BenchArgs),
    /// Internal: the process between `exec` and its command (see guard.rs).
    #[command(name = guard::SUBCOMMAND, hide = true)]
    Guard(guard::GuardArgs),
    /// Internal: the command the torture's exec holders run under `exec`.
    #[command(name = cmd::torture::outside::exec_hold::SUBCOMMAND, hide = true)]
    TortureHold(cmd::torture::outside::exec_hold::HoldArgs),
    /// Run torture against each planted bug; fails unless every one is caught (the planted-bug build of `tests/mutants.sh` only).
    #[cfg(redquorum_mutants)]
    Mutants(cmd::mutants::MutantsArgs),
}

impl Command {
    /// Whether the command reads `--nodes`: all but `nodes` (which starts
    /// its own) and the mutant sweep (which runs on local nodes), so a bad
    /// `REDQUORUM_NODES` in the environment does not stop those.
    fn takes_nodes(&self) -> bool {
        #[cfg(redquorum_mutants)]
        if matches!(self, Command::Mutants(_)) {
            return false;
        }
        !matches!(
            self,
            Command::Nodes(_) | Command::Guard(_) | Command::TortureHold(_)
        )
    }

    /// Whether the command itself takes nodes down on purpose (torture, the
    /// mutant sweep), so that nodes going down are its report's, not warnings.
    fn strikes_nodes(&self) -> bool {
        #[cfg(redquorum_mutants)]
        if matches!(self, Command::Mutants(_)) {
            return true;
        }
        matches!(self, Command::Torture(_))
    }

    /// For a command that starts local nodes, how long it may wrap up
    /// after SIGINT or SIGTERM before they are stopped for it
    /// (`interrupt.rs`): torture and the sweep say how far they got, demo
    /// and bench get none. None for the rest, which handle their own
    /// signals or start no node.
    fn stop_grace(&self) -> Option<Duration> {
        #[cfg(redquorum_mutants)]
        if matches!(self, Command::Mutants(_)) {
            return Some(interrupt::GRACE);
        }
        match self {
            Command::Torture(_) => Some(interrupt::GRACE),
            Command::Demo(_) | Command::Bench(_) => Some(Duration::ZERO),
            _ => None,
        }
    }
}

/// What a build without planted bugs adds to clap's usage error when asked
/// for them (`redquorum mutants`, `torture --mutant`): the command line is
/// still wrong (exit 64), but the reason is the build, not a typo.
fn no_planted_bugs(e: &clap::Error) -> Option<&'static str> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if cfg!(redquorum_mutants) {
        return None;
    }
    let asked = match (e.kind(), e.get(ContextKind::InvalidSubcommand)) {
        (ErrorKind::InvalidSubcommand, Some(ContextValue::String(name))) => name == "mutants",
        (ErrorKind::UnknownArgument, _) => matches!(
            e.get(ContextKind::InvalidArg),
            Some(ContextValue::String(arg)) if arg.starts_with("--mutant")
        ),
        _ => false,
    };
    asked.then_some(
        "redquorum: this build has no planted bugs: `mutants` and `torture --mutant` exist only \
         in the planted-bug build, tests/mutants.sh (the patches of crates/redquorum/mutants/ \
         built with --cfg redquorum_mutants; docs/torture.md, \"How planted bugs are built\")",
    )
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            if let Some(hint) = no_planted_bugs(&e) {
                stderr_line!("{hint}");
            }
            return if e.use_stderr() {
                exit::USAGE.into()
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // The guard is a plain blocking process: no runtime, no threads (its
    // signal mask and the parent-death signal are per thread).
    if let Command::Guard(args) = &cli.command {
        return guard::run(args);
    }
    if let Command::TortureHold(args) = &cli.command {
        return cmd::torture::outside::exec_hold::run(args);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            stderr_line!("redquorum: cannot start the async runtime: {e}");
            return exit::SOFTWARE.into();
        }
    };
    // An `exec` or a `serve` that a planted-bug torture started runs with its bug.
    #[cfg(redquorum_mutants)]
    if let (Command::Exec(_) | Command::Serve(_), Ok(name)) = (
        &cli.command,
        std::env::var(cmd::torture::outside::MUTANT_ENV),
    ) {
        redquorum::mutants::activate(name.parse().ok());
    }
    let verbosity = verbosity::Verbosity::new(cli.quiet, cli.verbose);
    let faults_on_purpose = cli.command.strikes_nodes();
    verbosity.install(faults_on_purpose);
    let nodes = if cli.command.takes_nodes() {
        match nodes_arg::NodesArg::from_entries(cli.nodes) {
            Ok(nodes) => nodes,
            Err(problem) => {
                stderr_line!("redquorum: {problem}");
                return exit::USAGE.into();
            }
        }
    } else {
        nodes_arg::NodesArg::default()
    };
    let stop_grace = cli.command.stop_grace();
    let command = async move {
        match cli.command {
            Command::Demo(args) => cmd::demo::run(&nodes, args, verbosity).await,
            Command::Exec(mut args) => {
                args.lease.quiet = cli.quiet;
                cmd::exec::run(&nodes, args).await
            }
            Command::Elect(mut args) => {
                args.lease.quiet = cli.quiet;
                cmd::election::elect::run(&nodes, args).await
            }
            Command::Leader(args) => cmd::election::leader::run(&nodes, args).await,
            Command::Lock(args) => cmd::ticket::lock(&nodes, args).await,
            Command::Extend(args) => cmd::ticket::extend(&nodes, args).await,
            Command::Unlock(args) => cmd::ticket::unlock(&nodes, args).await,
            Command::Release(args) => cmd::operator::release::run(&nodes, args).await,
            Command::Serve(args) => cmd::serve::serve(&nodes, args).await,
            Command::List(args) => cmd::operator::list::run(&nodes, args).await,
            Command::Status(args) => cmd::status::run(&nodes, args).await,
            Command::Nodes(args) => cmd::nodes::run(args),
            Command::Torture(args) => cmd::torture::run(&nodes, *args).await,
            Command::Bench(args) => cmd::bench::run_bench(&nodes, args, verbosity).await,
            Command::Guard(_) | Command::TortureHold(_) => {
                unreachable!("the guard and the torture's hold run before the runtime starts")
            }
            #[cfg(redquorum_mutants)]
            Command::Mutants(args) => cmd::mutants::run(args).await,
        }
    };
    runtime.block_on(async move {
        match stop_grace {
            Some(grace) => interrupt::stoppable(command, grace).await,
            None => command.await,
        }
    })
}
