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

/// The commands redquorum itself sends, whatever the lock kind (`set`:
/// the default lock's acquire, a native command on a single server).
pub const REDQUORUM_COMMANDS: &[&str] = &[
    "set",
    "evalsha",
    "eval",
    "script|load",
    "subscribe",
    "unsubscribe",
    "ping",
];
