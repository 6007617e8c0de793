//! A lease renewed after it ended: an extension sent when the deadline then
//! in force had already passed must fail. Between that deadline and the
//! extension the holder held nothing (its keys may have expired and another
//! holder come and gone), so a lock that renews it anyway tells the holder
//! it held the resource throughout when it did not. Whatever the store
//! does with the revived holder's writes, the lock broke its promise.
//!
//! The extension's `at` is taken before the call, and the deadline on the
//! same clock, so a lock that checks its deadline when the call starts is
//! never flagged. A hold the lock renews by itself (a leadership's
//! watchdog) is not judged: its deadline moved without the extensions the
//! history records.

use std::time::Duration;

use crate::evidence::{Extension, Session};

/// Every extension granted to `session` after the deadline then in force
/// had passed, with that deadline.
pub(crate) fn revivals(session: &Session) -> Vec<(Extension, Duration)> {
    let Some(mut deadline) = session.validity_end.filter(|_| !session.renews_itself) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for extension in &session.extensions {
        if extension.at > deadline {
            found.push((*extension, deadline));
        }
        deadline = extension.until;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn extended(at: u64, until: u64) -> Extension {
        Extension {
            at: ms(at),
            until: ms(until),
        }
    }

    #[test]
    fn extensions_sent_before_each_deadline_are_renewals() {
        let mut s = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        s.extensions = vec![extended(60, 160), extended(150, 250)];
        assert!(revivals(&s).is_empty());
    }

    #[test]
    fn an_extension_sent_after_the_deadline_in_force_is_a_revival() {
        let mut s = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        // The first renews in time; the second comes after 160 passed.
        s.extensions = vec![extended(60, 160), extended(400, 500)];
        assert_eq!(revivals(&s), [(extended(400, 500), ms(160))]);
    }

    #[test]
    fn a_hold_the_lock_renews_by_itself_is_not_judged() {
        let mut s = Session::granted(0, "r", "a", ms(0), ms(1), ms(100));
        s.extensions = vec![extended(400, 500)];
        s.renews_itself = true;
        assert!(revivals(&s).is_empty());
    }

    #[test]
    fn a_session_never_granted_has_none() {
        let s = Session::refused(0, "r", ms(0), "contended");
        assert!(revivals(&s).is_empty());
    }
}
