//! The key audit's loop: read every voter (`read.rs`) every few tens
//! of milliseconds and keep each remembered (voter, key, owner)'s lives: a
//! life ends at the first good read of its voter that no longer shows it
//! (`gone`), and a later sighting starts another (`back_after`). A voter
//! that could not be read whole is skipped for the round, so it ends no life.
//! Every round, every hold at any age and every fence counter's value also
//! go to the [`Backing`] (`backing.rs`), for the premise rules.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::backing::{AuditRead, Backing, BackingLog};
use super::config::AuditConfig;
use super::key_life::KeyLife;
use super::read::Voters;

/// Reads until `stop`, counting rounds in `rounds`; every life seen, by
/// first sighting, and every round's backing.
pub(super) fn run(
    mut voters: Voters,
    config: &AuditConfig,
    stop: &AtomicBool,
    rounds: &AtomicU64,
) -> (Vec<KeyLife>, Backing) {
    let count = voters.len();
    // Every life of every remembered (node, key, owner), the last one open
    // until a read of its node no longer shows it.
    let mut seen: HashMap<(usize, String, String), Vec<KeyLife>> = HashMap::new();
    // Per node: the remembered holds still open, and its last good read.
    let mut open: Vec<HashSet<(String, String)>> = vec![HashSet::new(); count];
    let mut last_read: Vec<Option<Duration>> = vec![None; count];
    let mut backing = BackingLog::default();
    while !stop.load(Ordering::SeqCst) {
        backing.begin_round(count);
        for node in 0..count {
            let sent = config.epoch.elapsed();
            let Some(read) = voters.read(node, &config.keys) else {
                continue;
            };
            let at = config.epoch.elapsed();
            backing.read(node, AuditRead { sent, at }, &read.holds);
            backing.counters(node, &read.counters);
            let mut present = HashSet::new();
            for (key, owner, pttl) in read.holds {
                // A key without expiry (PTTL -1) is there, of no known age.
                let left = u64::try_from(pttl).ok().map(Duration::from_millis);
                let age = left.map(|left| config.ttl.saturating_sub(left));
                let hold = (node, key, owner);
                present.insert((hold.1.clone(), hold.2.clone()));
                if let Some(lives) = seen.get_mut(&hold) {
                    let last = lives.last_mut().expect("a remembered hold has a life");
                    if last.gone.is_none() {
                        last.last_seen = at;
                        last.last_sent = Some(sent);
                        last.age = age.unwrap_or(last.age);
                        last.left = left.or(last.left);
                    } else {
                        // Back after it had gone: the previous read of this
                        // node did not show it (else it would be open).
                        lives.push(KeyLife {
                            node,
                            key: hold.1.clone(),
                            owner: hold.2.clone(),
                            first_seen: at,
                            last_seen: at,
                            last_sent: Some(sent),
                            age: age.unwrap_or_default(),
                            left,
                            gone: None,
                            back_after: last_read[node],
                        });
                        open[node].insert((hold.1, hold.2));
                    }
                    continue;
                }
                let Some(age) = age.filter(|age| *age >= config.min_age) else {
                    continue;
                };
                open[node].insert((hold.1.clone(), hold.2.clone()));
                seen.insert(
                    hold.clone(),
                    vec![KeyLife {
                        node,
                        key: hold.1,
                        owner: hold.2,
                        first_seen: at,
                        last_seen: at,
                        last_sent: Some(sent),
                        age,
                        left,
                        gone: None,
                        back_after: None,
                    }],
                );
            }
            let ended: Vec<(String, String)> = open[node].difference(&present).cloned().collect();
            for (key, owner) in ended {
                open[node].remove(&(key.clone(), owner.clone()));
                if let Some(life) = seen
                    .get_mut(&(node, key, owner))
                    .and_then(|lives| lives.last_mut())
                {
                    life.gone = Some(at);
                }
            }
            last_read[node] = Some(at);
        }
        rounds.fetch_add(1, Ordering::SeqCst);
        config.nudge.wait(config.every);
    }
    let mut lives: Vec<KeyLife> = seen.into_values().flatten().collect();
    lives.sort_by_key(|l| (l.first_seen, l.node));
    (lives, backing.finish())
}
