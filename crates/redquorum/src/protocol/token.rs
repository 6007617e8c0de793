//! The owner token: a fresh 128-bit random value per acquisition.

use std::fmt;

/// The random value stored in the lock key on each node, proving ownership.
///
/// A new token is drawn for every acquisition (never a thread or process id),
/// so a stale holder can never release or extend a later holder's lock.
/// It displays as 32 lower-case hex digits.
///
/// # Examples
///
/// ```
/// use redquorum::OwnerToken;
///
/// let a = OwnerToken::random();
/// let b = OwnerToken::random();
/// assert_ne!(a, b);
/// assert_eq!(a.to_string().len(), 32);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct OwnerToken(u128);

impl OwnerToken {
    /// Draws a new token from the thread-local CSPRNG.
    ///
    /// # Examples
    ///
    /// ```
    /// let token = redquorum::OwnerToken::random();
    /// println!("{token}");
    /// ```
    #[must_use]
    pub fn random() -> Self {
        Self(rand::random())
    }

    /// The token whose string form is `value`'s 32 hex digits (a lease ticket's).
    pub(crate) fn from_u128(value: u128) -> Self {
        Self(value)
    }
}

impl fmt::Display for OwnerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Debug for OwnerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OwnerToken({self})")
    }
}
