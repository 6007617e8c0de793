//! Exit statuses, from sysexits(3), as the CLI contract (DESIGN §6) names them.

/// The command line was wrong.
pub(crate) const USAGE: u8 = 64;
/// A quorum of nodes was unavailable.
pub(crate) const UNAVAILABLE: u8 = 69;
/// Internal failure, or the lease was lost while the child ran.
pub(crate) const SOFTWARE: u8 = 70;
/// The lock was not acquired within `--wait`.
pub(crate) const TEMPFAIL: u8 = 75;
