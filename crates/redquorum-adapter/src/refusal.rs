//! What every adapter of redquorum shares: the one-word kind of a refused
//! acquire, as reports group them, and the commands redquorum sends.

use redquorum::Error;

/// A one-word kind for a refused acquire, as reports group them.
///
/// # Examples
///
/// ```
/// let error = redquorum::Error::Lost { resource: "r".into() };
/// assert_eq!(redquorum_adapter::refusal_kind(&error), "lost");
/// ```
#[must_use]
pub fn refusal_kind(error: &Error) -> &'static str {
    match error {
        Error::Contended { .. } => "contended",
        Error::Unavailable { .. } => "unavailable",
        Error::Expired { .. } => "expired",
        Error::NotHeld { .. } => "not-held",
        Error::Lost { .. } => "lost",
        Error::WaitTimeout { last, .. } => refusal_kind(last),
        _ => "other",
    }
}

/// The commands redquorum sends besides its lock calls, whatever the lock
/// kind, as the servers count them. Its lock calls (`EVALSHA`, `EVAL`, and
/// the default acquire's native `SET` on a single server) are counted by
/// its metric `redquorum_node_calls_total`: a server counts a script's
/// inner `SET` as a `SET` call too.
pub const REDQUORUM_COMMANDS: &[&str] = &["script|load", "subscribe", "unsubscribe", "ping"];
