//! `Share`: how a granted hold may share its resource with others (readers,
//! one reentrant owner, a semaphore's permits), as a session records it and
//! a lock adapter declares it in its grants. The checker's rules for shared
//! holds are in `check/sharing.rs`.

use serde::{Deserialize, Serialize};

/// How a granted hold may share its resource with others. `None` on a
/// session (the default) is an exclusive hold.
///
/// # Examples
///
/// ```
/// use redquorum_harness::Share;
/// assert!(Share::Readers.shares_with(&Share::Readers));
/// assert!(!Share::Readers.shares_with(&Share::Permits { of: 2 }));
/// let owner = |id: &str| Share::Owner { id: id.into() };
/// assert!(owner("a").shares_with(&owner("a")));
/// assert!(!owner("a").shares_with(&owner("b")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "with")]
#[non_exhaustive]
pub enum Share {
    /// A read lock: shares with other readers only.
    Readers,
    /// A reentrant hold: shares with the holds of the same owner only.
    Owner {
        /// The owner's id.
        id: String,
    },
    /// A semaphore permit: shares with other permits, at most `of` at once.
    Permits {
        /// The semaphore's permit count.
        of: u32,
    },
}

impl Share {
    /// Whether a hold sharing as `self` may overlap one sharing as `other`
    /// (permits: as far as their count allows, which the checker counts).
    #[must_use]
    pub fn shares_with(&self, other: &Share) -> bool {
        match (self, other) {
            (Share::Readers, Share::Readers) | (Share::Permits { .. }, Share::Permits { .. }) => {
                true
            }
            (Share::Owner { id: a }, Share::Owner { id: b }) => a == b,
            _ => false,
        }
    }

    /// A short name for reports: `readers`, `owner`, `permits`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Share::Readers => "readers",
            Share::Owner { .. } => "owner",
            Share::Permits { .. } => "permits",
        }
    }
}
