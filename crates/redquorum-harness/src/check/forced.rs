//! Which overlaps an operator's force-release excuses: it ousts a holder
//! by design, so a successor granted after it overlaps the ousted holder's
//! belief in its lease, and when one of the two held without a token no
//! fenced store keeps the ousted write out (the lost update is excused
//! too). A force-release removes only the holds it found, and its removal
//! may land after the call returned when a fault held it on the way.

use std::time::Duration;

use crate::evidence::{OPERATOR_GROUP, OperatorAction, OperatorCall, Session};
use crate::faults::FaultEvent;

/// The run's force-releases, each with the latest time its removals may
/// still land: its end, or, when a fault that holds commands back struck
/// the operator's connections while it ran (a fault on the nodes, or one
/// aimed at the operator's client group, [`OPERATOR_GROUP`]), the slack
/// after that fault healed. A stalled connection delivers what it held when
/// it heals, long after the call gave up on those nodes (seen: 450 ms).
#[derive(Debug)]
pub(crate) struct ForceReleases<'a> {
    calls: Vec<(&'a OperatorCall, Duration)>,
}

impl<'a> ForceReleases<'a> {
    /// The force-releases among `calls`, with what `faults` may have held
    /// back up to `slack` after they healed.
    pub(crate) fn new(calls: &'a [OperatorCall], faults: &[FaultEvent], slack: Duration) -> Self {
        let calls = calls
            .iter()
            .filter(|c| matches!(c.action, OperatorAction::ForceRelease { .. }))
            .map(|c| {
                let held = faults
                    .iter()
                    .filter(|f| f.kind.delays_commands() && f.overlaps(c.start, c.end))
                    .filter(|f| f.group.is_none_or(|g| g == OPERATOR_GROUP))
                    .map(|f| f.end + slack);
                (c, held.fold(c.end, Duration::max))
            })
            .collect();
        Self { calls }
    }

    /// Whether a force-release excuses `successor`'s overlap with `ousted`'s
    /// claim that was asked for at `asked` (its acquire's start, or the
    /// sending of the extension whose window overlaps): one began before
    /// `successor`'s grant, could have found `ousted`'s holds (`ousted`
    /// began to acquire before it ended: it removes only what it found), and
    /// may have landed after `asked`, so it may have removed `ousted`'s keys
    /// after that claim landed and freed the resource for `successor`. The
    /// ousted holder believes in that claim until its next extension fails,
    /// even past the successor's grant; a claim asked for after every
    /// removal had landed found the keys gone and had to fail.
    pub(crate) fn excuse_overlap(
        &self,
        ousted: &Session,
        asked: Duration,
        successor: &Session,
    ) -> bool {
        let Some(granted) = successor.grant else {
            return false;
        };
        self.calls.iter().any(|&(c, lands_until)| {
            c.is_force_release_of(&ousted.resource)
                && c.start <= granted
                && ousted.start <= c.end
                && lands_until >= asked
        })
    }

    /// Whether a force-release excuses the lost update between `a` and
    /// `b`: one of them asked for no token (so no fenced store could refuse
    /// it once ousted) and a force-release came between them
    /// ([`Self::excuse_overlap`], either way round). Between two holders
    /// with tokens fencing keeps the ousted one's write out, so their lost
    /// update stays a violation.
    pub(crate) fn excuse_lost_update(&self, a: &Session, b: &Session) -> bool {
        (a.fence.is_none() || b.fence.is_none())
            && (self.excuse_overlap(a, a.start, b) || self.excuse_overlap(b, b.start, a))
    }
}

#[cfg(test)]
#[path = "tests/forced_tests.rs"]
mod tests;
