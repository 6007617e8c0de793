//! Exit statuses of `exec` when the command could not run: the contract of
//! docs/cli.md ("Exit status").

use redquorum::Error;

use crate::exit;

/// 69 when too few nodes answered (also as the last error of a wait), 75 when
/// the lock is busy or came too late, 64 for a bad resource.
pub(super) fn acquire_exit_code(error: &Error) -> u8 {
    match error {
        Error::Unavailable { .. } => exit::UNAVAILABLE,
        Error::Contended { .. } | Error::Expired { .. } => exit::TEMPFAIL,
        Error::WaitTimeout { last, .. } => match **last {
            Error::Unavailable { .. } => exit::UNAVAILABLE,
            _ => exit::TEMPFAIL,
        },
        Error::EmptyResource | Error::ZeroPermits { .. } => exit::USAGE,
        _ => exit::SOFTWARE,
    }
}

/// No token: 70 when the lease was lost before the command could start,
/// 69 when too few nodes took the token (or a fence counter is corrupt);
/// the command never ran.
pub(super) fn fence_exit_code(error: &Error) -> u8 {
    match error {
        Error::Lost { .. } | Error::NotHeld { .. } => exit::SOFTWARE,
        _ => exit::UNAVAILABLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn acquire_errors_map_to_the_contract() {
        assert_eq!(acquire_exit_code(&Error::EmptyResource), exit::USAGE);
        let expired = Error::Expired {
            resource: "r".into(),
            elapsed: Duration::from_secs(1),
            ttl: Duration::from_secs(1),
        };
        assert_eq!(acquire_exit_code(&expired), exit::TEMPFAIL);
        let waited = Error::WaitTimeout {
            resource: "r".into(),
            waited: Duration::from_secs(1),
            last: Box::new(expired),
        };
        assert_eq!(acquire_exit_code(&waited), exit::TEMPFAIL);
    }
}
