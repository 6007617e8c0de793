//! What backs each hold, round by round: the key audit's record for the
//! premise rule (`check/audit/premise/unbacked.rs`). Every round of the audit reads
//! each voter once; an [`AuditRound`] keeps when each read was sent and answered
//! (or that it failed), and a [`HoldTrack`] keeps, for one (voter, key,
//! owner), the runs of rounds that showed it and the expiry they showed,
//! at every age (the lives in `audit.rs` keep only holds older than the
//! audit's minimum age).
//!
//! Memory stays small: a run of rounds is one entry as long as the hold's
//! expiry stays within [`SAME_EXPIRY`], so a hold costs one entry per
//! extension, and a round one pair of times per voter.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::micros;

/// How far two sightings' expiries may differ and still be one [`Seen`]
/// (the read's own timing jitters by a few ms; an extension moves it by
/// a good part of the TTL).
pub const SAME_EXPIRY: Duration = Duration::from_millis(10);

/// One read of one voter: sent at `sent`, answered at `at` (history clock);
/// what it shows is the voter's state at some moment in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRead {
    /// Before the read was sent.
    #[serde(with = "micros")]
    pub sent: Duration,
    /// After its answer came.
    #[serde(with = "micros")]
    pub at: Duration,
}

/// One round of the audit: each voter's read, `None` where it failed (a
/// voter down, paused, or half read).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRound {
    /// By voter index.
    pub reads: Vec<Option<AuditRead>>,
}

/// Consecutive good reads of a voter that showed a hold with about the
/// same expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// The first round that showed it.
    pub from: u32,
    /// The last.
    pub to: u32,
    /// The earliest expiry they showed (read's answer time plus time left).
    #[serde(with = "micros")]
    pub low: Duration,
    /// The latest: at each of these reads the hold expired no later.
    #[serde(with = "micros")]
    pub high: Duration,
}

/// One (voter, key, owner)'s sightings, round by round.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{HoldTrack, Seen};
/// let ms = Duration::from_millis;
/// let track = HoldTrack {
///     node: 0, key: "lock:{r}".into(), owner: "a".into(),
///     seen: vec![Seen { from: 3, to: 9, low: ms(2000), high: ms(2004) }],
/// };
/// assert_eq!(track.at_round(5).map(|s| s.high), Some(ms(2004)));
/// assert!(track.at_round(10).is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldTrack {
    /// The voter's index.
    pub node: usize,
    /// The lock key.
    pub key: String,
    /// The hold's owner token.
    pub owner: String,
    /// Runs of rounds that showed it, in order.
    pub seen: Vec<Seen>,
}

impl HoldTrack {
    /// The run that covers `round`, if the hold was shown then.
    #[must_use]
    pub fn at_round(&self, round: u32) -> Option<&Seen> {
        let i = self.seen.partition_point(|s| s.to < round);
        self.seen.get(i).filter(|s| s.from <= round)
    }
}

/// One (voter, fence counter key)'s values, round by round: each change
/// as the first round that showed it and the value then (0: no counter).
///
/// # Examples
///
/// ```
/// let track = redquorum_harness::CounterTrack {
///     node: 0, key: "lock:{r}:fence".into(), changes: vec![(2, 40), (7, 0)],
/// };
/// assert_eq!([1, 2, 6, 7].map(|round| track.at_round(round)), [0, 40, 40, 0]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterTrack {
    /// The voter's index.
    pub node: usize,
    /// The fence counter key.
    pub key: String,
    /// (round, value) at each change, in order.
    pub changes: Vec<(u32, u64)>,
}

impl CounterTrack {
    /// The value a good read of the voter at `round` showed (0: none).
    #[must_use]
    pub fn at_round(&self, round: u32) -> u64 {
        let after = self.changes.partition_point(|(from, _)| *from <= round);
        after.checked_sub(1).map_or(0, |i| self.changes[i].1)
    }
}

/// Every round, every hold's track and every fence counter's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backing {
    /// The rounds, in order (a [`Seen`] names them by index).
    pub rounds: Vec<AuditRound>,
    /// Every hold seen, by first sighting.
    pub holds: Vec<HoldTrack>,
    /// Every fence counter seen, by first sighting (empty in histories
    /// from before they were read).
    pub counters: Vec<CounterTrack>,
}

impl Backing {
    /// An empty record (`Evidence`'s default).
    pub const EMPTY: &'static Backing = &Backing {
        rounds: Vec::new(),
        holds: Vec::new(),
        counters: Vec::new(),
    };
}

/// Builds a [`Backing`] as the audit reads.
#[derive(Debug, Default)]
pub(super) struct BackingLog {
    rounds: Vec<AuditRound>,
    holds: Vec<HoldTrack>,
    index: HashMap<(usize, String, String), usize>,
    /// Per voter: the round of its last good read.
    last_good: Vec<Option<u32>>,
    counters: Vec<CounterTrack>,
    /// Per voter: each counter key's track.
    counter_index: Vec<HashMap<String, usize>>,
}

impl BackingLog {
    /// Starts a round of `voters` reads.
    pub(super) fn begin_round(&mut self, voters: usize) {
        self.rounds.push(AuditRound {
            reads: vec![None; voters],
        });
        self.last_good.resize(voters, None);
        self.counter_index.resize_with(voters, HashMap::new);
    }

    /// The fence counters voter `node`'s good read in this round (after
    /// [`Self::read`]) showed: a change starts an entry; a counter it
    /// showed before and not now is 0 from here.
    pub(super) fn counters(&mut self, node: usize, shown: &[(String, u64)]) {
        let Some(round) = self.rounds.len().checked_sub(1) else {
            return;
        };
        let round = round as u32;
        let mut now: HashMap<String, u64> = shown.iter().cloned().collect();
        for key in self.counter_index[node].keys() {
            now.entry(key.clone()).or_insert(0);
        }
        for (key, value) in now {
            let tracks = &mut self.counters;
            let at = *self.counter_index[node]
                .entry(key)
                .or_insert_with_key(|key| {
                    tracks.push(CounterTrack {
                        node,
                        key: key.clone(),
                        changes: Vec::new(),
                    });
                    tracks.len() - 1
                });
            let changes = &mut self.counters[at].changes;
            if changes.last().map_or(0, |(_, last)| *last) != value {
                changes.push((round, value));
            }
        }
    }

    /// Voter `node`'s good read in this round, showing `holds`: (key,
    /// owner, time left in ms; −1: no expiry).
    pub(super) fn read(&mut self, node: usize, read: AuditRead, holds: &[(String, String, i64)]) {
        let Some(round) = self.rounds.len().checked_sub(1) else {
            return;
        };
        self.rounds[round].reads[node] = Some(read);
        let round = round as u32;
        let previous = self.last_good[node];
        for (key, owner, pttl) in holds {
            // No expiry: it backs any deadline.
            let expires = u64::try_from(*pttl)
                .map_or(Duration::MAX, |ms| read.at + Duration::from_millis(ms));
            let id = (node, key.clone(), owner.clone());
            let at = *self.index.entry(id).or_insert_with(|| {
                self.holds.push(HoldTrack {
                    node,
                    key: key.clone(),
                    owner: owner.clone(),
                    seen: Vec::new(),
                });
                self.holds.len() - 1
            });
            let seen = &mut self.holds[at].seen;
            match seen.last_mut() {
                Some(last)
                    if Some(last.to) == previous
                        && last.high.max(expires) - last.low.min(expires) <= SAME_EXPIRY =>
                {
                    last.to = round;
                    last.low = last.low.min(expires);
                    last.high = last.high.max(expires);
                }
                _ => seen.push(Seen {
                    from: round,
                    to: round,
                    low: expires,
                    high: expires,
                }),
            }
        }
        self.last_good[node] = Some(round);
    }

    /// What was recorded.
    pub(super) fn finish(self) -> Backing {
        Backing {
            rounds: self.rounds,
            holds: self.holds,
            counters: self.counters,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(at_ms: u64) -> AuditRead {
        let at = Duration::from_millis(at_ms);
        AuditRead { sent: at, at }
    }

    fn hold(pttl: i64) -> Vec<(String, String, i64)> {
        vec![("lock:{r}".into(), "a".into(), pttl)]
    }

    #[test]
    fn a_steady_hold_is_one_run_and_a_gap_or_an_extension_starts_another() {
        let mut log = BackingLog::default();
        for (t, pttl) in [(0, 2000), (50, 1950), (100, 1900)] {
            log.begin_round(1);
            log.read(0, read(t), &hold(pttl));
        }
        log.begin_round(1);
        log.read(0, read(150), &[]); // gone for a read
        log.begin_round(1);
        log.read(0, read(200), &hold(1800));
        log.begin_round(1);
        log.read(0, read(250), &hold(2000)); // extended: expiry moved
        let backing = log.finish();
        assert_eq!(backing.rounds.len(), 6);
        let seen = &backing.holds[0].seen;
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!((seen[0].from, seen[0].to), (0, 2));
        assert_eq!(seen[0].high, Duration::from_millis(2000));
        assert_eq!((seen[1].from, seen[1].to), (4, 4));
        assert_eq!(seen[2].high, Duration::from_millis(2250));
        assert!(backing.holds[0].at_round(3).is_none());
    }

    #[test]
    fn a_counter_is_a_change_per_new_value_and_zero_once_a_read_lacks_it() {
        let mut log = BackingLog::default();
        let counter = |value: u64| vec![("lock:{r}:fence".to_owned(), value)];
        for shown in [counter(5), counter(5), counter(9), vec![], counter(3)] {
            log.begin_round(2);
            log.read(0, read(0), &[]);
            log.counters(0, &shown);
        }
        let backing = log.finish();
        assert_eq!(backing.counters.len(), 1);
        let track = &backing.counters[0];
        assert_eq!(track.changes, [(0, 5), (2, 9), (3, 0), (4, 3)]);
        assert_eq!([0, 1, 2, 3, 4].map(|r| track.at_round(r)), [5, 5, 9, 0, 3]);
    }

    #[test]
    fn a_failed_read_is_none_and_does_not_split_a_run() {
        let mut log = BackingLog::default();
        log.begin_round(2);
        log.read(0, read(0), &hold(2000));
        log.begin_round(2); // voter 0 unreadable this round
        log.read(1, read(50), &[]);
        log.begin_round(2);
        log.read(0, read(100), &hold(1900));
        let backing = log.finish();
        assert_eq!(backing.rounds[1].reads[0], None);
        assert_eq!(backing.holds[0].seen.len(), 1);
        assert_eq!(backing.holds[0].at_round(1).map(|s| s.to), Some(2));
    }
}
