//! The orphan-key rule (`orphan-key`): no lock key lives on after its
//! owner's attempt was unwound or its lease released. A key of a granted
//! owner seen more than the slack after its release (or its deadline), or
//! a key of a never-granted owner seen more than the slack after every
//! attempt that may have set it ended (a fault around any of their ends
//! may excuse it), is an orphan,
//! unless a fault on that node explains it, and only as long as it can:
//!
//! - the fault must have been in force while the release (or unwind) was
//!   on its way to that node: from the slack before it (a client still
//!   reconnecting cannot send it) to the slack after it (a loaded client
//!   sends it late); a kill or a majority restart up to twice the slack
//!   after it (the node's log, written every second, may bring back a key
//!   deleted just before);
//! - a fault that may lose the command outright (a kill, a restart, a
//!   connection reset, a partition, a cluster fault: the release fails and
//!   the key lives to its TTL, which the leak check bounds) excuses the
//!   key for the rest of its life;
//! - a fault that only delays it (a pause, latency, a stall, a slow
//!   majority, a client pause: every byte is delivered when it heals)
//!   excuses the key only until the slack after the fault ended; a key
//!   still there later was dropped, not delayed — unless the holder ran
//!   in a process of its own that ended with its release
//!   ([`Session::deadline_unseen`]: `redquorum exec`), granted or not,
//!   that ended with its release or unwind: what it still owed a delayed
//!   node ended with it, so there the delay loses the command;
//! - a key set (by its age) after its owner's last write could be sent
//!   (its release, deadline, or its process's exit) is a write the fault
//!   held back, landed as the fault healed or within the slack after: it
//!   lives its TTL from then, which the leak check bounds (a granted
//!   holder's write to one node may be held while the others grant it).
//!
//! On a loaded machine a removal may reach its node later than the slack
//! after it was due: when the holds on the sender's path to that node (its
//! client runtime's and its fault proxy's late wake-ups), met one after
//! another, kept it past then (`path_lag.rs`). The key may live that much
//! longer, and a fault met on the way that much later explains it; the
//! faults' own excuses are not stretched. A write held in
//! a proxy past the exit of the `exec` that sent it lives its TTL, as one
//! a delaying fault held back does, and so does a key whose release or
//! unwind an `exec` still owed a node whose proxy was held when it exited.
//!
//! A key counts as seen when the read that saw it was sent
//! ([`KeyLife::surely_there_at`]): its answer may come much later (a slow
//! node or proxy, a starved audit), and the key may have gone meanwhile.
//!
//! A never-granted owner's unwind is due when its attempt ended
//! ([`Session::ended`]). When the lock told the attempt's token
//! ([`Session::tried`]), the key is that attempt's own, and due then (an
//! attempt retried by an acquire granted later: by that grant, since the
//! lock unwinds an attempt before it tries again); otherwise it may be any
//! attempt on its resource running when it was set ([`attempt_ends`]), and
//! it is due when the last of them ended.
//! A hold in a process of its own (`exec`) is due to be released when that
//! process exited (its `ended`): its recorded release is its command's last
//! step, and `exec` releases after it.

pub(crate) mod path_lag;

use std::collections::HashMap;
use std::time::Duration;

use self::path_lag::path_lag;
use super::excuse::{Sender, explains, holds_back_write, may_hold_write_until};
use crate::check::by_time::{self, ByTime};
use crate::check::verdict::Evidence;
use crate::check::violation::Violation;
use crate::evidence::{KeyLife, RuntimeLag, Session};

/// When the attempt that set a never-granted owner's `key` may have ended,
/// for each attempt that may have set it, if any is known and later than
/// the key's set time: its unwind is due then (the lock sends it before
/// the error returns), not when the key was set — a client starved of CPU
/// ends its attempt long after its acquire landed. The attempts that may
/// have set it are the refused `sessions` on the key's resource running
/// when it was set (within a tenth of the slack: the audit's reads take
/// time); the history does not say which one did. Empty without an
/// `ended` recorded, or for a resource name the key does not show as
/// `{name}` (a lock's record and a semaphore's slot do). An attempt that
/// ended before the key was set may have set it too, when a fault held
/// its write back until then (`held_back`: a paused node runs the acquire
/// when it wakes, after an `exec` that gave up has exited).
fn attempt_ends(
    key: &KeyLife,
    refused: &RefusedByResource<'_>,
    slack: Duration,
    (held_back, earliest_hold): (
        &impl Fn(&KeyLife, (Duration, Duration)) -> bool,
        &impl Fn(&KeyLife) -> Duration,
    ),
) -> Vec<(Duration, Duration, Sender)> {
    let set_at = key.set_at();
    let read = slack / 10;
    // An attempt that ended before the key was set and before every hold
    // that may have held a write back until then began was not held back:
    // only the attempts ending from then on are looked at.
    let from = set_at.min(earliest_hold(key));
    refused
        .iter()
        .filter(|(name, _)| key.key.contains(*name))
        .flat_map(|(_, attempts)| attempts.overlapping(from, set_at + read))
        .filter(|&&(start, end, _)| {
            start <= set_at + read && (end > set_at || held_back(key, (start, end)))
        })
        .copied()
        .collect()
}

/// An ended attempt: its start, its end, who sent its unwind.
type Attempt = (Duration, Duration, Sender);

/// The ended attempts by `{resource}`, built once per check (a soak's
/// keys and sessions are both in the tens of thousands), found by the
/// span they ran in.
type RefusedByResource<'a> = HashMap<&'a str, ByTime<'a, Attempt>>;

fn refused_by_resource(sessions: &[Session]) -> HashMap<String, Vec<Attempt>> {
    let mut by: HashMap<String, Vec<Attempt>> = HashMap::new();
    for s in sessions.iter().filter(|s| s.grant.is_none()) {
        if let Some(end) = s.ended {
            // An attempt in a process of its own (`exec`) unwinds as it
            // exits: what it still owed a delayed node ended with it.
            let sender = Sender {
                gone: s.deadline_unseen,
                group: None,
            };
            by.entry(format!("{{{}}}", s.resource))
                .or_default()
                .push((s.start, end, sender));
        }
    }
    by
}

/// When a granted owner's keys were due to go: `(released, due)`, both its
/// release (else its deadline) — but for a hold kept by a process of its
/// own (`exec`, [`Session::deadline_unseen`]) `release` is its command's
/// last step, and the process sends its release after that, by the time it
/// exited ([`Session::ended`]): due then.
///
/// A hold handed over as a lease ticket ([`Session::adopted_from`] of
/// later sessions: `adoptions`, the latest grant of an adopter of each
/// owner) goes when the move lands: by the adopter's grant. (A hold nobody
/// adopted is nobody's: it lives to its TTL on each node, which may be
/// later than its holder's deadline when a renewal sent before the
/// hand-over landed after it, and [`orphans`] leaves it to the leak check.)
fn removal_due(owner: &Session, adoptions: &Adoptions<'_>) -> (Duration, Duration) {
    let released = owner.release.or(owner.deadline()).unwrap_or_default();
    match (adoptions.get(owner.owner.as_str()), owner.ended) {
        (Some(Some(adopted)), _) => (released, released.max(*adopted)),
        (_, Some(exited)) if owner.deadline_unseen => (released, released.max(exited)),
        _ => (released, released),
    }
}

/// Owners whose holds were handed over, each with the latest grant of an
/// adopter (`None`: no adopter was granted).
type Adoptions<'a> = HashMap<&'a str, Option<Duration>>;

fn adoptions(sessions: &[Session]) -> Adoptions<'_> {
    let mut by: Adoptions<'_> = HashMap::new();
    for s in sessions {
        if let Some(from) = &s.adopted_from {
            let latest = by.entry(from.as_str()).or_default();
            *latest = (*latest).max(s.grant);
        }
    }
    by
}

/// The latest a granted owner can have sent a write (its acquire, an
/// extension): its process's exit for a hold kept by a process of its own
/// (`exec`, [`Session::deadline_unseen`]), else its release, else its
/// deadline. A key of its set later was held back on the way.
fn last_write_sent(owner: &Session) -> Duration {
    match owner.ended {
        Some(exited) if owner.deadline_unseen => exited,
        _ => owner.release.or(owner.deadline()).unwrap_or_default(),
    }
}

/// Whether a never-granted owner's `key`, whose attempt is not known,
/// outlived every attempt that may have set it ([`attempt_ends`]) with no
/// fault explaining it for any of them; with none known, by its age (its
/// set time may lie before the history's start). `lag`: how long the
/// holds on the path kept a removal due at a given time (`path_lag.rs`).
fn outlived_every_attempt(
    key: &KeyLife,
    refused: &RefusedByResource<'_>,
    (slack, lag): (
        Duration,
        &impl Fn(&KeyLife, Option<usize>, Duration) -> Duration,
    ),
    lags: &[RuntimeLag],
    (held_back, earliest_hold): (
        &impl Fn(&KeyLife, (Duration, Duration)) -> bool,
        &impl Fn(&KeyLife) -> Duration,
    ),
    excused: &impl Fn(&KeyLife, (Duration, Duration), Sender, bool) -> bool,
) -> bool {
    let ends = attempt_ends(key, refused, slack, (held_back, earliest_hold));
    match ends.iter().map(|&(_, end, _)| end).max() {
        Some(latest) => {
            // A process that exited sends nothing after it: no hold it did
            // not meet by then delays what it sent.
            let lag = if ends.iter().all(|&(_, _, sender)| sender.gone) {
                Duration::ZERO
            } else {
                lag(key, None, latest)
            };
            // An attempt in a process of its own whose write was held back
            // past its exit, or whose unwind was held in the node's proxy
            // when it exited: nobody is left to unwind it.
            let orphaned_by_exit = |start: Duration, end: Duration, sender: Sender| {
                sender.gone
                    && ((key.set_at() > end && held_back(key, (start, end)))
                        || path_lag::proxy_held_at(lags, key.node, sender.group, end))
            };
            key.surely_there_at() > latest + lag + slack
                && !ends.iter().any(|&(start, end, sender)| {
                    excused(key, (end, end + lag), sender, false)
                        || orphaned_by_exit(start, end, sender)
                })
        }
        None => {
            let set_at = key.set_at();
            let lag = lag(key, None, set_at);
            key.age > lag + slack && !excused(key, (set_at, set_at + lag), Sender::default(), false)
        }
    }
}

/// Every orphan key of `evidence`; `owners` are the granted sessions by
/// owner token, `tried` the sessions by the tokens their acquire tried.
pub(crate) fn orphans(
    evidence: &Evidence<'_>,
    owners: &HashMap<&str, &Session>,
    tried: &HashMap<&str, &Session>,
) -> Vec<Violation> {
    let slack = evidence.slack;
    let faults = by_time::faults(evidence.faults);
    // `sent`: from the earliest the removal may have been sent to the
    // latest it may have reached the node. `late`: whether the key's own
    // write may have landed late (a never-granted attempt's key, whose
    // unwind may overtake it).
    let excused = |key: &KeyLife, sent: (Duration, Duration), sender: Sender, late: bool| {
        let set_at = key.set_at();
        let late_write = late.then_some((set_at, set_at));
        // No fault outside these bounds explains it.
        let (from, until) = (sent.0.saturating_sub(slack), sent.1 + slack * 2);
        faults.overlapping(from, until).any(|f| {
            explains(
                f,
                slack,
                key.node,
                (sent, key.surely_there_at()),
                late_write,
                sender,
            )
        })
    };
    // A write held back by a delaying fault, or in a held proxy.
    let held_back = |key: &KeyLife, sent: (Duration, Duration)| {
        let set_at = key.set_at();
        (faults.overlapping(sent.0, sent.1))
            .any(|f| holds_back_write(f, slack, key.node, sent, set_at))
            || path_lag::holds_back_write(evidence.lags, key.node, None, sent, set_at, slack)
    };
    // When the earliest fault or proxy hold that may have held a write to
    // the key's node back until it was set began (its set time if none).
    let earliest_hold = |key: &KeyLife| {
        let set_at = key.set_at();
        let fault = (faults.overlapping(set_at.saturating_sub(slack), set_at))
            .filter(|f| may_hold_write_until(f, slack, key.node, set_at))
            .map(|f| f.start);
        let proxy = path_lag::earliest_write_hold(evidence.lags, key.node, set_at, slack);
        fault.chain(proxy).min().unwrap_or(set_at)
    };
    // How much later than the slack after `due` the holds on the sender's
    // path to the key's node may have let a removal reach it.
    let lag = |key: &KeyLife, group: Option<usize>, due: Duration| {
        path_lag(evidence.lags, key.node, group, due, slack)
    };
    let refused = refused_by_resource(evidence.sessions);
    let refused: RefusedByResource<'_> = (refused.iter())
        .map(|(name, attempts)| (name.as_str(), ByTime::new(attempts, |a| (a.0, a.1))))
        .collect();
    let adoptions = adoptions(evidence.sessions);
    let mut found = Vec::new();
    for key in evidence.keys {
        let orphan = match owners.get(key.owner.as_str()) {
            // Handed over, adopted by no one: nobody's, to its TTL.
            Some(owner) if adoptions.get(owner.owner.as_str()) == Some(&None) => false,
            Some(owner) => {
                let (released, due) = removal_due(owner, &adoptions);
                let sender = Sender {
                    gone: owner.deadline_unseen,
                    group: Some(owner.group),
                };
                // A write that landed after the owner's last one was sent
                // was held back, and lives its TTL from when it landed.
                let set_at = key.set_at();
                let writer = Sender {
                    gone: false,
                    ..sender
                };
                let lag = if sender.gone {
                    Duration::ZERO
                } else {
                    lag(key, sender.group, released.min(due))
                };
                let last_write = last_write_sent(owner);
                let held_write = || {
                    let span = (owner.start, last_write);
                    set_at > last_write
                        && (excused(key, (set_at, set_at), writer, true)
                            || (path_lag::holds_back_write(
                                evidence.lags,
                                key.node,
                                writer.group,
                                span,
                                set_at,
                                slack,
                            )))
                };
                // A release an `exec` still owed the node when it exited,
                // waiting in the node's proxy then, was lost with it.
                let owed_at_exit = || {
                    sender.gone
                        && path_lag::proxy_held_at(evidence.lags, key.node, sender.group, due)
                };
                key.surely_there_at() > due + lag + slack
                    && !excused(key, (due, due + lag), sender, false)
                    && !excused(key, (released, released + lag), sender, false)
                    && !held_write()
                    && !owed_at_exit()
            }
            None => match tried
                .get(key.owner.as_str())
                .and_then(|attempt| Some((attempt.unwind_due()?, attempt)))
            {
                // Its own attempt's unwind was due then.
                Some((due, attempt)) => {
                    let sender = Sender {
                        gone: false,
                        group: Some(attempt.group),
                    };
                    let lag = lag(key, sender.group, due);
                    // Unwound at some time between its acquire's start and `due`.
                    key.surely_there_at() > due + lag + slack
                        && !excused(key, (attempt.start.min(due), due + lag), sender, true)
                }
                None => {
                    let slacks = (slack, &lag);
                    let lags = evidence.lags;
                    let holds = (&held_back, &earliest_hold);
                    outlived_every_attempt(key, &refused, slacks, lags, holds, &excused)
                }
            },
        };
        if orphan {
            found.push(Violation::OrphanKey {
                key: key.clone(),
                owner: owners
                    .get(key.owner.as_str())
                    .map(|s| Box::new((*s).clone())),
                attempt: tried
                    .get(key.owner.as_str())
                    .map(|s| Box::new((*s).clone())),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests;
