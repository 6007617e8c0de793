//! Exit statuses, from sysexits(3), as the CLI contract names them (docs/cli.md, "Exit status").

/// The command line was wrong.
pub(crate) const USAGE: u8 = 64;
/// A quorum of nodes was unavailable.
pub(crate) const UNAVAILABLE: u8 = 69;
/// Internal failure, or the lease was lost while the child ran.
pub(crate) const SOFTWARE: u8 = 70;
/// Output could not be written (`redquorum lock`'s ticket: the hold is released).
pub(crate) const IOERR: u8 = 74;
/// The lock was not acquired within `--wait`.
pub(crate) const TEMPFAIL: u8 = 75;

/// A process's status as shells report it: its exit code, or 128 + the
/// signal that killed it (70 if the status says neither).
pub(crate) fn shell_status(code: Option<i32>, signal: Option<i32>) -> u8 {
    match (code, signal) {
        // Exit codes are 0..=255 on Unix; the fallback cannot happen.
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(255),
        (None, None) => SOFTWARE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    fn status_of(script: &str) -> u8 {
        let status = Command::new("sh")
            .args(["-c", script])
            .status()
            .expect("sh runs");
        shell_status(status.code(), status.signal())
    }

    #[test]
    fn exit_codes_pass_through_and_signals_become_128_plus_n() {
        assert_eq!(status_of("exit 0"), 0);
        assert_eq!(status_of("exit 3"), 3);
        assert_eq!(status_of("kill -TERM $$"), 128 + 15);
        assert_eq!(shell_status(None, None), SOFTWARE);
    }
}
