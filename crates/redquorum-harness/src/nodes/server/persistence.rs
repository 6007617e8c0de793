//! `Persistence`: what a local node writes to disk, which decides what it
//! remembers after a crash (and so whether a killed node may rejoin at once).

/// What a node writes to disk, which decides what it remembers after a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Persistence {
    /// Nothing: a restarted node is empty (unsafe for Redlock without a delayed restart).
    #[default]
    None,
    /// AOF, fsync once a second: survives a process kill, not an OS crash.
    AofEverySec,
    /// AOF, fsync before every reply: survives both.
    AofAlways,
}

impl Persistence {
    /// The `redis-server` arguments that set it.
    pub(in crate::nodes) fn args(self) -> &'static [&'static str] {
        match self {
            Persistence::None => &["--appendonly", "no"],
            Persistence::AofEverySec => &["--appendonly", "yes", "--appendfsync", "everysec"],
            Persistence::AofAlways => &["--appendonly", "yes", "--appendfsync", "always"],
        }
    }
}
