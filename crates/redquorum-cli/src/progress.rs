//! Progress bars of the long runs (`bench`, `demo`), on stderr through
//! `indicatif`: hidden with `-q` and when stderr is not a terminal, so
//! scripts and CI logs see none.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::verbosity::Verbosity;

/// A bar counting `len` items (`demo`: buyers done).
pub(crate) fn counter(verbosity: Verbosity, len: u64, unit: &str) -> ProgressBar {
    let template = format!("[{{bar:40}}] {{pos}}/{{len}} {unit} {{msg}}");
    bar(verbosity, len, &template)
}

/// A bar over a run of `duration` (`bench`), in tenths of a second.
pub(crate) fn timed(verbosity: Verbosity, duration: Duration, label: &str) -> ProgressBar {
    let tenths = (duration.as_millis() / 100).max(1) as u64;
    let template = format!("{label} [{{bar:40}}] {{elapsed}} of {duration:?} {{msg}}");
    bar(verbosity, tenths, &template)
}

/// Advances a [`timed`] bar every 100 ms until dropped or finished.
pub(crate) fn tick_over_time(bar: &ProgressBar) -> tokio::task::JoinHandle<()> {
    let bar = bar.clone();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(Duration::from_millis(100));
        ticks.tick().await;
        while !bar.is_finished() && bar.position() < bar.length().unwrap_or(0) {
            ticks.tick().await;
            bar.inc(1);
        }
    })
}

fn bar(verbosity: Verbosity, len: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len), target(verbosity));
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("#>."));
    }
    bar
}

fn target(verbosity: Verbosity) -> ProgressDrawTarget {
    if verbosity.shows_progress() && std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}
