//! The lock kinds the benchmarks, `redquorum bench` and `redquorum torture
//! --kind` name ([`LockKind`]), by their names.

use std::fmt;
use std::str::FromStr;

/// A lock kind, taken exclusively on one resource, so that its latency and
/// hand-off compare with the plain lock's and the torture checker's mutual
/// exclusion applies to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// `Redlock::lock`.
    Plain,
    /// `ReentrantOwner::lock`, a fresh owner per acquire (so two workers contend).
    Reentrant,
    /// `Redlock::write_lock`.
    Write,
    /// `Redlock::lock_any` over the one resource.
    AnyOf,
    /// `Redlock::lock_all` over the one resource.
    AllOf,
    /// `Redlock::semaphore(resource, 1)`, `Semaphore::acquire`.
    Semaphore,
    /// `Redlock::election(resource)`, `Election::campaign("bench")`, `resign`.
    Election,
    /// `Redlock::read_lock`: readers share (the torture's mixed workload and
    /// `--kind read`; not in the benchmark's tables).
    Read,
}

impl LockKind {
    /// Every kind but the plain lock, in the order the benchmark prints them
    /// beside it.
    pub const BESIDE_PLAIN: [LockKind; 6] = [
        LockKind::Reentrant,
        LockKind::Write,
        LockKind::AnyOf,
        LockKind::AllOf,
        LockKind::Semaphore,
        LockKind::Election,
    ];

    /// The kind's name in the benchmark's tables and `--libs`, and
    /// `redquorum torture --kind`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_adapter::LockKind::AnyOf.name(), "any-of");
    /// ```
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Plain => "plain",
            LockKind::Reentrant => "reentrant",
            LockKind::Write => "write",
            LockKind::AnyOf => "any-of",
            LockKind::AllOf => "all-of",
            LockKind::Semaphore => "semaphore",
            LockKind::Election => "election",
            LockKind::Read => "read",
        }
    }

    /// Every kind: the plain lock, the ones beside it, and readers.
    pub const ALL: [LockKind; 8] = {
        let [a, b, c, d, e, f] = LockKind::BESIDE_PLAIN;
        [LockKind::Plain, a, b, c, d, e, f, LockKind::Read]
    };
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LockKind {
    type Err = String;

    /// A kind by its [`name`](LockKind::name).
    ///
    /// # Examples
    ///
    /// ```
    /// use redquorum_adapter::LockKind;
    /// assert_eq!("semaphore".parse::<LockKind>(), Ok(LockKind::Semaphore));
    /// assert!("mutex".parse::<LockKind>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<Self, String> {
        LockKind::ALL
            .into_iter()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = LockKind::ALL.into_iter().map(LockKind::name).collect();
                format!("unknown lock kind {s:?} (kinds: {})", names.join(", "))
            })
    }
}
