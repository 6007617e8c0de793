//! Which holds may share one resource, and the checker's rules for them.
//!
//! Every lock kind of the library is one lock per resource name (a plain
//! lock, a write lock, readers, a reentrant owner, semaphore permits, an
//! election's leader, a multi-lock member): kinds exclude each other, and
//! only three sharings are allowed: readers with readers, the holds of one
//! reentrant owner with each other, and at most K permits of a semaphore.
//! A session records how its hold may share ([`Share`]); the checker
//! excuses exactly those overlaps (an overlap between kinds, or a K + 1st
//! permit, is still reported), and orders fencing tokens only between holds
//! that cannot share (concurrent sharers propose their tokens in any order).

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use crate::evidence::{Session, Share};

/// Whether two sessions' holds may overlap on their resource.
pub(crate) fn may_share(a: &Session, b: &Session) -> bool {
    match (&a.share, &b.share) {
        (Some(x), Some(y)) => x.shares_with(y),
        _ => false,
    }
}

/// Whether `s` holds a permit, and of how many.
fn permits_of(s: &Session) -> Option<u32> {
    match s.share {
        Some(Share::Permits { of }) => Some(of),
        _ => None,
    }
}

/// When window `i` (of session `sessions[i]`, a permit) opens while the
/// sessions in `open` hold: the open permits beyond its count, or none.
/// `open` lists sessions (by index) whose windows are still open.
pub(crate) fn permits_over(sessions: &[&Session], open: &[usize], i: usize) -> Vec<usize> {
    let Some(of) = permits_of(sessions[i]) else {
        return Vec::new();
    };
    let others: HashSet<usize> = open
        .iter()
        .copied()
        .filter(|&j| j != i && permits_of(sessions[j]).is_some())
        .collect();
    if others.len() < of as usize {
        return Vec::new();
    }
    let mut over: Vec<usize> = others.into_iter().collect();
    over.sort_unstable();
    over
}

/// The class whose members may hold at once (and so propose fencing
/// tokens in any order): `None` for an exclusive hold.
fn class(s: &Session) -> Option<String> {
    s.share.as_ref().map(|share| match share {
        Share::Owner { id } => format!("owner:{id}"),
        other => other.name().to_owned(),
    })
}

/// Pairs (earlier, later) of fenced sessions in grant order whose tokens do
/// not increase: each session against the highest token granted before it
/// to a hold it cannot share with (a hold granted after another that
/// excluded it must carry a higher token; sharers propose in any order;
/// a hold adopted from that earlier one carries its token on).
/// A hold taken out of sight ([`Session::deadline_unseen`]: `redquorum
/// exec`) is recorded as granted when its command started, and took its
/// token at some time since its attempt began: it is held only to the
/// holds granted before that.
pub(crate) fn fence_inversions<'a>(granted: &[&'a Session]) -> Vec<(&'a Session, &'a Session)> {
    // Per class, the earlier session with the highest token.
    let mut highest: Vec<(Option<String>, &Session)> = Vec::new();
    let mut out = Vec::new();
    for s in granted.iter().copied().filter(|s| s.fence.is_some()) {
        let mine = class(s);
        let excludes = |c: &Option<String>| mine.is_none() || *c != mine;
        let above = if s.deadline_unseen {
            granted
                .iter()
                .copied()
                .filter(|e| e.fence.is_some() && e.grant < Some(s.start) && excludes(&class(e)))
                .max_by_key(|e| e.fence)
        } else {
            highest
                .iter()
                .filter(|(c, _)| excludes(c))
                .map(|(_, e)| *e)
                .max_by_key(|e| e.fence)
        };
        if let Some(earlier) = above {
            // An adopted hold carries its old holder's token on.
            let carried = s.adopted_from.as_deref() == Some(earlier.owner.as_str())
                && s.fence == earlier.fence;
            if s.fence <= earlier.fence && !carried {
                out.push((earlier, s));
            }
        }
        match highest.iter_mut().find(|(c, _)| *c == mine) {
            Some(entry) if entry.1.fence < s.fence => entry.1 = s,
            Some(_) => {}
            None => highest.push((mine, s)),
        }
    }
    out
}

/// How many granted sessions held while another hold they share with held
/// the same resource, by [`Share::name`]: what a run exercised of sharing.
pub(crate) fn shared_holds(sessions: &[Session]) -> BTreeMap<&'static str, usize> {
    let mut by_resource: BTreeMap<&str, Vec<&Session>> = BTreeMap::new();
    for s in sessions.iter().filter(|s| s.share.is_some()) {
        by_resource.entry(&s.resource).or_default().push(s);
    }
    let mut counts = BTreeMap::new();
    for list in by_resource.values() {
        let mut shared = HashSet::new();
        let mut open: Vec<(Duration, usize)> = Vec::new();
        for (from, until, i) in windows(list) {
            open.retain(|(end, _)| *end > from);
            for &(_, j) in &open {
                if j != i && may_share(list[j], list[i]) {
                    shared.extend([i, j]);
                }
            }
            open.push((until, i));
        }
        for i in shared {
            if let Some(share) = &list[i].share {
                *counts.entry(share.name()).or_default() += 1;
            }
        }
    }
    counts
}

/// The windows of every session, `(from, until, index)`, sorted by start.
pub(crate) fn windows(granted: &[&Session]) -> Vec<(Duration, Duration, usize)> {
    let mut windows: Vec<(Duration, Duration, usize)> = granted
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.windows().into_iter().map(move |(a, b)| (a, b, i)))
        .collect();
    windows.sort();
    windows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn held(client: usize, owner: &str, from: u64, to: u64, share: Option<Share>) -> Session {
        let mut s = Session::granted(client, "r", owner, ms(from), ms(from), ms(to));
        s.share = share;
        s
    }

    fn overlaps(sessions: &[Session]) -> usize {
        let values = [("r".to_owned(), 0)].into_iter().collect();
        let mut sessions = sessions.to_vec();
        for s in &mut sessions {
            // Read-only: the counter rule has nothing to say.
            s.outcome = crate::evidence::Outcome::ReadOnly;
        }
        check(&sessions, &values, &[]).count("overlap")
    }

    #[test]
    fn readers_share_with_readers_only() {
        let r1 = held(0, "a", 0, 100, Some(Share::Readers));
        let r2 = held(1, "b", 10, 120, Some(Share::Readers));
        assert_eq!(overlaps(&[r1.clone(), r2]), 0);
        let plain = held(2, "c", 50, 150, None);
        assert_eq!(overlaps(&[r1.clone(), plain]), 1);
        let permit = held(3, "d", 50, 150, Some(Share::Permits { of: 5 }));
        assert_eq!(overlaps(&[r1, permit]), 1);
    }

    #[test]
    fn one_reentrant_owner_shares_and_two_do_not() {
        let owner = |id: &str| Some(Share::Owner { id: id.into() });
        let a1 = held(0, "t1", 0, 100, owner("a"));
        let a2 = held(1, "t2", 10, 120, owner("a"));
        let b = held(2, "t3", 20, 130, owner("b"));
        assert_eq!(overlaps(&[a1.clone(), a2]), 0);
        assert_eq!(overlaps(&[a1, b]), 1);
    }

    #[test]
    fn at_most_k_permits_hold_at_once() {
        let permit = |c: usize, from: u64| {
            held(
                c,
                &format!("p{c}"),
                from,
                from + 100,
                Some(Share::Permits { of: 2 }),
            )
        };
        assert_eq!(overlaps(&[permit(0, 0), permit(1, 10)]), 0);
        // A third while two hold: over the count (named against both).
        assert_eq!(overlaps(&[permit(0, 0), permit(1, 10), permit(2, 20)]), 2);
        // A third after the first ended: fine.
        assert_eq!(overlaps(&[permit(0, 0), permit(1, 10), permit(2, 100)]), 0);
    }

    #[test]
    fn sharing_is_counted_per_kind_of_share() {
        let r1 = held(0, "a", 0, 100, Some(Share::Readers));
        let r2 = held(1, "b", 10, 120, Some(Share::Readers));
        let alone = held(2, "c", 200, 300, Some(Share::Readers));
        let counts = shared_holds(&[r1, r2, alone]);
        assert_eq!(counts.get("readers"), Some(&2));
        assert_eq!(counts.len(), 1);
    }

    #[test]
    fn fences_order_only_holds_that_cannot_share() {
        let mut r1 = held(0, "a", 0, 100, Some(Share::Readers));
        let mut r2 = held(1, "b", 10, 120, Some(Share::Readers));
        let mut w = held(2, "c", 130, 200, None);
        r1.fence = Some(20);
        r2.fence = Some(10); // a sharer granted later with a lower token: allowed
        w.fence = Some(30);
        let all = [&r1, &r2, &w];
        assert!(fence_inversions(&all).is_empty());
        // A writer not above the readers before it is reported.
        w.fence = Some(15);
        let all = [&r1, &r2, &w];
        let found = fence_inversions(&all);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.owner, "a", "the highest earlier token");
    }
}
