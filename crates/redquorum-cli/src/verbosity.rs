//! The global `-v`/`-q` flags: how much the library logs (through a
//! `tracing` subscriber on stderr) and whether progress bars are drawn.
//!
//! stdout carries only a command's output (`--json` output stays pure
//! JSON); logs and progress go to stderr.

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// How talkative a run is, from the global flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verbosity {
    /// `-q`: errors only, no progress.
    quiet: bool,
    /// The number of `-v`s.
    verbose: u8,
}

impl Verbosity {
    pub(crate) fn new(quiet: bool, verbose: u8) -> Self {
        Self { quiet, verbose }
    }

    /// The library's log level: errors with `-q`, warnings by default
    /// (a replica among the nodes, an evicting node), then info, debug
    /// (each node's outcome) and trace with `-v`, `-vv`, `-vvv`.
    pub(crate) fn level(self) -> LevelFilter {
        match (self.quiet, self.verbose) {
            (true, _) => LevelFilter::ERROR,
            (false, 0) => LevelFilter::WARN,
            (false, 1) => LevelFilter::INFO,
            (false, 2) => LevelFilter::DEBUG,
            (false, _) => LevelFilter::TRACE,
        }
    }

    /// Whether progress bars may be drawn (they are also hidden when
    /// stderr is not a terminal).
    pub(crate) fn shows_progress(self) -> bool {
        !self.quiet
    }

    /// Sends the library's `tracing` events to stderr at [`level`](Self::level).
    /// From `-v` on, each closing span is a line too: one per acquire
    /// attempt, extension and release, with its result and duration (the
    /// library's spans are at INFO; observability.md).
    /// Installs the stderr subscriber. With `faults_on_purpose` (torture
    /// and the mutant sweep strike nodes all the time), a node going down
    /// and coming back, or a cluster master's shard failing over, is not
    /// worth a warning each time: those lines show from `-v` on, and the
    /// report counts the faults.
    pub(crate) fn install(self, faults_on_purpose: bool) {
        let spans = if self.level() >= LevelFilter::INFO {
            FmtSpan::CLOSE
        } else {
            FmtSpan::NONE
        };
        let links = if faults_on_purpose && self.level() < LevelFilter::INFO {
            LevelFilter::ERROR
        } else {
            self.level()
        };
        // The modules that say so (by module path: `node/link.rs`, `node/cluster.rs`).
        let targets = Targets::new()
            .with_default(self.level())
            .with_target("redquorum::node::link", links)
            .with_target("redquorum::node::cluster", links);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(self.level())
            .with_span_events(spans)
            .with_writer(std::io::stderr)
            // On a failed write (a closed stderr) the subscriber would
            // report it with `eprintln!`, which panics: drop it instead.
            .log_internal_errors(false)
            .with_target(false)
            .without_time()
            .finish()
            .with(targets);
        // Fails only if a subscriber is already installed, which nothing here does.
        let _ = subscriber.try_init();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_wins_and_each_v_adds_a_level() {
        assert_eq!(Verbosity::new(true, 3).level(), LevelFilter::ERROR);
        assert_eq!(Verbosity::new(false, 0).level(), LevelFilter::WARN);
        assert_eq!(Verbosity::new(false, 1).level(), LevelFilter::INFO);
        assert_eq!(Verbosity::new(false, 2).level(), LevelFilter::DEBUG);
        assert_eq!(Verbosity::new(false, 9).level(), LevelFilter::TRACE);
        assert!(!Verbosity::new(true, 0).shows_progress());
        assert!(Verbosity::new(false, 0).shows_progress());
    }
}
