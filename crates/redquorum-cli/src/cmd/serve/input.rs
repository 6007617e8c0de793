//! What the service accepts from a client, checked before anything is sent
//! to a node: names, TTLs and waits within the service's limits, leases
//! that parse and name the lock of the route. A refusal is a 400 that says
//! which field and why.

use std::time::Duration;

use redquorum::Ticket;

use super::problem::Problem;

/// The largest request body (a lease and two numbers need far less).
pub(crate) const MAX_BODY: usize = 16 * 1024;

/// The longest lock name, in bytes.
const MAX_NAME: usize = 512;

/// The service's bounds on what a client may ask.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_ttl: Duration,
    pub(crate) max_wait: Duration,
}

impl Limits {
    /// `ttl_ms` as a TTL: at least 1 ms, at most `max_ttl`.
    pub(crate) fn ttl(&self, ttl_ms: u64) -> Result<Duration, Problem> {
        let ttl = Duration::from_millis(ttl_ms);
        if ttl.is_zero() || ttl > self.max_ttl {
            return Err(Problem::bad_request(format!(
                "ttl_ms must be from 1 to {} (the service's --max-ttl)",
                self.max_ttl.as_millis()
            )));
        }
        Ok(ttl)
    }

    /// `wait_ms` as a wait: at most `max_wait` (0: one attempt).
    pub(crate) fn wait(&self, wait_ms: u64) -> Result<Duration, Problem> {
        let wait = Duration::from_millis(wait_ms);
        if wait > self.max_wait {
            return Err(Problem::bad_request(format!(
                "wait_ms must be at most {} (the service's --max-wait)",
                self.max_wait.as_millis()
            )));
        }
        Ok(wait)
    }
}

/// Checks a lock name from the route: 1 to 512 bytes, no control
/// characters (it becomes part of a key on every node).
pub(crate) fn name(name: &str) -> Result<&str, Problem> {
    if name.is_empty() || name.len() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(Problem::bad_request(format!(
            "a lock name is 1 to {MAX_NAME} bytes without control characters"
        )));
    }
    Ok(name)
}

/// The longest value a leader proclaims, in bytes.
const MAX_VALUE: usize = 1024;

/// Checks a leader's value: 1 to 1 024 bytes, no control characters.
pub(crate) fn value(value: &str) -> Result<&str, Problem> {
    if value.is_empty() || value.len() > MAX_VALUE || value.chars().any(char::is_control) {
        return Err(Problem::bad_request(format!(
            "value: 1 to {MAX_VALUE} bytes without control characters"
        )));
    }
    Ok(value)
}

/// The lease of a plain or write lock named `name`, parsed: a lease that
/// does not parse, or of another lock, is refused.
pub(crate) fn lease(text: &str, name: &str) -> Result<Ticket, Problem> {
    let ticket: Ticket = text
        .parse()
        .map_err(|e| Problem::bad_request(format!("lease: {e}")))?;
    if ticket.resource() != name {
        return Err(Problem::bad_request(
            "lease: it is the lease of another lock than the route's",
        ));
    }
    Ok(ticket)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_ttl: Duration::from_secs(60),
        max_wait: Duration::from_secs(10),
    };

    #[test]
    fn ttls_and_waits_are_bounded() {
        assert!(LIMITS.ttl(0).is_err());
        assert_eq!(LIMITS.ttl(1).unwrap(), Duration::from_millis(1));
        assert!(LIMITS.ttl(60_000).is_ok());
        assert!(LIMITS.ttl(60_001).is_err());
        assert!(LIMITS.ttl(u64::MAX).is_err());
        assert_eq!(LIMITS.wait(0).unwrap(), Duration::ZERO);
        assert!(LIMITS.wait(10_001).is_err());
    }

    #[test]
    fn names_are_bounded_and_printable() {
        assert!(name("deploy/prod").is_ok());
        assert!(name("").is_err());
        assert!(name("a\nb").is_err());
        assert!(name(&"x".repeat(MAX_NAME + 1)).is_err());
    }

    #[test]
    fn a_lease_must_parse_and_name_the_routes_lock() {
        assert!(lease("not a lease", "r").is_err());
        let ticket = "rq1:lock:0123456789abcdef0123456789abcdef:-:1700000000000:r";
        assert!(lease(ticket, "r").is_ok(), "{:?}", lease(ticket, "r"));
        assert!(lease(ticket, "other").is_err());
        let write = "rq1:write:0123456789abcdef0123456789abcdef:7:1700000000000:r";
        assert_eq!(lease(write, "r").map(|t| t.kind()).ok(), Some("write"));
    }
}
