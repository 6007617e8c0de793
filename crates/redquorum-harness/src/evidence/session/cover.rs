//! A hold of several resources at once (an all-of set, [`Session::also`])
//! as a hold of each of them, for the checker.

use super::{Outcome, Session};

impl Session {
    /// Its hold on each other resource it covers ([`Session::also`]), as a
    /// session of that resource (whose `also` is the rest of the set): the
    /// same owner, grant, lease, extensions and release, but neither a
    /// fencing token (the set's token was
    /// checked on the resource it was asked for) nor a use of the
    /// protected store (the holder used only the resource it was asked
    /// for). Judged like any hold of that resource: overlaps, backing,
    /// the operator's promises, the lock-delay.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut s = redquorum_harness::Session::granted(0, "a", "o", Duration::ZERO, Duration::ZERO, Duration::from_secs(1));
    /// s.also = vec!["b".into()];
    /// let covered: Vec<_> = s.covered().collect();
    /// assert_eq!((covered[0].resource.as_str(), covered[0].owner.as_str()), ("b", "o"));
    /// assert!(covered[0].write_start.is_none());
    /// assert_eq!(covered[0].also, ["a"]);
    /// ```
    pub fn covered(&self) -> impl Iterator<Item = Session> + '_ {
        self.also
            .iter()
            .filter(|_| self.grant.is_some())
            .map(|name| Session {
                resource: name.clone(),
                // The rest of the set, so each hold knows its set as the first does.
                also: std::iter::once(&self.resource)
                    .chain(&self.also)
                    .filter(|other| *other != name)
                    .cloned()
                    .collect(),
                fence: None,
                read_at: None,
                read: None,
                wrote: None,
                write_start: None,
                write_end: None,
                outcome: Outcome::ReadOnly,
                ..self.clone()
            })
    }
}
