//! Messages on stderr that never panic. `eprintln!` panics when its write
//! fails, and it fails whenever stderr is a pipe whose reader has gone
//! (Rust ignores SIGPIPE, so the write returns EPIPE): a message would turn
//! `exec`'s status into 101, or end it before its command ran or its lock
//! was released. [`stderr_line!`] writes the same line and drops a failed
//! write, since there is nowhere left to report it. `eprintln!` and
//! `eprint!` are denied in this crate (main.rs).

use std::fmt;
use std::io::Write;

/// `eprintln!` without its panic: writes one line to stderr, or nothing if
/// stderr cannot be written.
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::stderr::write_line(format_args!($($arg)*))
    };
}

/// Writes `args` and a newline to stderr; a failed write is dropped.
pub(crate) fn write_line(args: fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// Writes `text` to stderr as it is (no newline added); a failed write is
/// dropped. For the mutant sweep's reports, which end in their own newline.
#[cfg(redquorum_mutants)]
pub(crate) fn write_text(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
