//! Owner information: who took a hold (host, process, a note of the
//! caller's), stored with the hold on every node so that an operator can
//! read it back (`Redlock::inspect`, `redquorum status`). An elected
//! leader's value is its note.

use std::fmt;

/// Who took a hold: the host, the process id and a note.
///
/// # Examples
///
/// ```
/// let info = redquorum::OwnerInfo::here("nightly report");
/// assert_eq!(info.pid(), std::process::id());
/// assert_eq!(info.note(), "nightly report");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerInfo {
    host: String,
    pid: u32,
    note: String,
}

impl OwnerInfo {
    /// This process on this host, with `note`. The host name is the
    /// kernel's (`/proc/sys/kernel/hostname`), else `$HOSTNAME`, else
    /// `unknown`.
    ///
    /// # Examples
    ///
    /// ```
    /// let info = redquorum::OwnerInfo::here("worker 3");
    /// assert!(!info.host().is_empty());
    /// ```
    #[must_use]
    pub fn here(note: impl Into<String>) -> Self {
        Self {
            host: host_name(),
            pid: std::process::id(),
            note: note.into(),
        }
    }

    /// The host name.
    ///
    /// # Examples
    ///
    /// ```
    /// println!("{}", redquorum::OwnerInfo::here("").host());
    /// ```
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The process id.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum::OwnerInfo::here("").pid() > 0);
    /// ```
    #[must_use]
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The caller's note (an elected leader's value).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum::OwnerInfo::here("x").note(), "x");
    /// ```
    #[must_use]
    pub fn note(&self) -> &str {
        &self.note
    }

    /// The stored form, `host:pid:note` (a host name has no `:`).
    pub(crate) fn encode(&self) -> String {
        format!("{}:{}:{}", self.host.replace(':', "_"), self.pid, self.note)
    }

    /// Reads the stored form back; `None` for anything else.
    pub(crate) fn decode(stored: &str) -> Option<Self> {
        let mut parts = stored.splitn(3, ':');
        let (host, pid, note) = (parts.next()?, parts.next()?, parts.next()?);
        Some(Self {
            host: host.to_owned(),
            pid: pid.parse().ok()?,
            note: note.to_owned(),
        })
    }
}

impl fmt::Display for OwnerInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} pid {}", self.host, self.pid)?;
        if !self.note.is_empty() {
            write!(f, ": {}", self.note)?;
        }
        Ok(())
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_stored_form_reads_back_and_shows_in_short() {
        let info = OwnerInfo {
            host: "web-1".into(),
            pid: 42,
            note: "a: note: with colons".into(),
        };
        assert_eq!(info.encode(), "web-1:42:a: note: with colons");
        assert_eq!(OwnerInfo::decode(&info.encode()), Some(info.clone()));
        assert_eq!(info.to_string(), "web-1 pid 42: a: note: with colons");
        assert_eq!(OwnerInfo::decode("garbage"), None);
        assert_eq!(OwnerInfo::decode("h:notapid:n"), None);
    }

    proptest! {
        #[test]
        fn any_note_survives_the_round_trip(note in ".{0,40}", pid in any::<u32>()) {
            let info = OwnerInfo { host: "h".into(), pid, note };
            prop_assert_eq!(OwnerInfo::decode(&info.encode()), Some(info));
        }
    }
}
