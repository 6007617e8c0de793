use std::time::Duration;

use super::*;
use crate::evidence::{AuditRead, AuditRound, Extension, Seen};
use crate::faults::FaultKind;

pub(in crate::check::audit) fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Rounds every 50 ms from 0 on `nodes` nodes (node `n` read at `+n` ms,
/// answered 1 ms later), each showing owner `a`'s hold on `lock:{r}` as
/// `shows(node, round)` says: its expiry in ms, or `None` (not shown).
pub(in crate::check::audit) fn backing(
    nodes: usize,
    rounds: u32,
    shows: impl Fn(usize, u32) -> Option<u64>,
) -> Backing {
    let read = |node: usize, round: u32| {
        let sent = ms(u64::from(round) * 50 + node as u64);
        AuditRead {
            sent,
            at: sent + ms(1),
        }
    };
    let rounds_read: Vec<AuditRound> = (0..rounds)
        .map(|r| AuditRound {
            reads: (0..nodes).map(|n| Some(read(n, r))).collect(),
        })
        .collect();
    let mut holds = Vec::new();
    for node in 0..nodes {
        let mut seen: Vec<Seen> = Vec::new();
        for round in 0..rounds {
            let Some(expires) = shows(node, round).map(ms) else {
                continue;
            };
            match seen.last_mut() {
                Some(last) if last.to + 1 == round && last.high == expires => last.to = round,
                _ => seen.push(Seen {
                    from: round,
                    to: round,
                    low: expires,
                    high: expires,
                }),
            }
        }
        if !seen.is_empty() {
            holds.push(HoldTrack {
                node,
                key: "lock:{r}".into(),
                owner: "a".into(),
                seen,
            });
        }
    }
    Backing {
        rounds: rounds_read,
        holds,
        counters: Vec::new(),
    }
}

/// Granted at 10 ms, deadline 900 ms, released at 950 ms.
pub(in crate::check::audit) fn session() -> Session {
    let mut s = Session::granted(0, "r", "a", ms(0), ms(10), ms(900));
    s.release = Some(ms(950));
    s
}

fn judge(s: &Session, backing: &Backing, faults: &[FaultEvent]) -> Option<Unbacked> {
    let ctx = PremiseContext {
        backing,
        faults: by_time::faults(faults),
        operator: by_time::calls(&[]),
        clock_off: &[],
    };
    let tracks: Vec<&HoldTrack> = backing.holds.iter().collect();
    unbacked(&ctx, s, &tracks)
}

#[test]
fn a_session_a_majority_holds_to_its_deadline_is_backed() {
    // Held on nodes 0..3 of 5 until 920 ms (past the 900 ms deadline).
    let held = backing(5, 30, |n, r| (n < 3 && r <= 18).then_some(920));
    assert_eq!(judge(&session(), &held, &[]), None);
}

#[test]
fn a_hold_on_a_minority_is_unbacked_at_the_first_round_after_the_grant() {
    let held = backing(5, 30, |n, _| (n < 2).then_some(920));
    let found = judge(&session(), &held, &[]).expect("unbacked");
    assert_eq!(
        found.nodes.iter().map(|n| n.node).collect::<Vec<_>>(),
        [2, 3, 4]
    );
    assert!(found.nodes.iter().all(|n| n.expires.is_none()));
    assert_eq!(
        found.at,
        ms(55),
        "round 1: the first read sent after the grant"
    );
    assert!(!found.extended);
    // Rounds no node answered neither judge nor end the premise.
    let mut unread = held.clone();
    for round in &mut unread.rounds[1..6] {
        round.reads.fill(None);
    }
    let found = judge(&session(), &unread, &[]).expect("unbacked");
    assert_eq!(found.at, ms(305), "round 6");
}

#[test]
fn a_hold_expiring_before_the_deadline_is_unbacked() {
    // On every node, but expiring at 800 ms, before the 900 ms deadline.
    let held = backing(3, 30, |_, r| (r <= 15).then_some(800));
    let found = judge(&session(), &held, &[]).expect("unbacked");
    assert_eq!(found.nodes.len(), 3);
    assert_eq!(found.nodes[0].expires, Some(ms(800)));
    // The ms rounding allowance: 2 ms short is still backed.
    let held = backing(3, 30, |_, r| (r <= 18).then_some(898));
    assert_eq!(judge(&session(), &held, &[]), None);
}

#[test]
fn a_renewed_extension_that_did_not_move_the_expiry_is_unbacked_once_it_returned() {
    let mut s = session();
    s.extensions.push(Extension {
        at: ms(500),
        until: ms(1800),
    });
    s.write_start = Some(ms(600)); // the extension had returned by then
    s.release = Some(ms(1850));
    let old_history = s.clone();
    s.renewed = vec![ms(520)];
    // The nodes keep the grant's expiry.
    let held = backing(3, 40, |_, r| (r <= 18).then_some(920));
    let found = judge(&s, &held, &[]).expect("unbacked");
    assert!(found.extended);
    assert_eq!(found.deadline, ms(1800));
    assert_eq!(
        found.at,
        ms(553),
        "round 11, the first sent after it returned"
    );
    let found = judge(&old_history, &held, &[]).expect("unbacked");
    assert_eq!(found.at, ms(603), "without the record: from the write on");
    // Moved to 1820 on every node: backed.
    let held = backing(3, 40, |_, r| match r {
        0..=10 => Some(920),
        11..=36 => Some(1820),
        _ => None,
    });
    assert_eq!(judge(&s, &held, &[]), None);
}

#[test]
fn the_premise_ends_at_the_release_and_starts_at_the_grant() {
    let mut s = session();
    s.release = Some(ms(300));
    // Gone everywhere from round 7 (350 ms), after the release.
    let held = backing(3, 30, |_, r| (r <= 6).then_some(920));
    assert_eq!(judge(&s, &held, &[]), None);
    // A read sent before the grant is not judged: granted at 52 ms, the
    // hold shown from round 2 on (100 ms) only.
    let mut late = session();
    late.grant = Some(ms(100));
    let held = backing(3, 30, |_, r| (2..=18).contains(&r).then_some(920));
    assert_eq!(judge(&late, &held, &[]), None);
}

#[test]
fn unread_nodes_and_faults_during_the_session_are_unknown_but_a_fault_before_it_is_not() {
    let held = backing(3, 30, |n, _| (n == 0).then_some(920));
    // A kill of nodes 1 and 2 while the session ran: unknown, so no majority against.
    let during = FaultEvent::new(FaultKind::Kill, vec![1, 2], ms(200), ms(300));
    let found = judge(&session(), &held, std::slice::from_ref(&during)).expect("before the kill");
    assert_eq!(found.at, ms(53), "judged before the fault began");
    let from_start = FaultEvent::new(FaultKind::Kill, vec![1, 2], ms(0), ms(5));
    assert_eq!(judge(&session(), &held, &[from_start]), None);
    // A kill that ended before the session began excuses nothing.
    let mut s = session();
    s.start = ms(600);
    s.grant = Some(ms(610));
    s.validity_end = Some(ms(1400));
    s.release = Some(ms(1450));
    let before = FaultEvent::new(FaultKind::Kill, vec![1, 2], ms(200), ms(300));
    assert!(judge(&s, &held, &[before]).is_some());
    // A latency fault takes nothing off a node: no excuse.
    let slow = FaultEvent::new(FaultKind::Latency, vec![1, 2], ms(0), ms(900));
    assert!(judge(&session(), &held, &[slow]).is_some());
    // Nodes the audit could not read are unknown.
    let mut unread = held.clone();
    for round in &mut unread.rounds {
        round.reads[1] = None;
    }
    assert_eq!(judge(&session(), &unread, &[]), None);
}

#[test]
fn a_session_whose_hold_the_audit_never_saw_is_not_judged() {
    let empty = backing(3, 30, |_, _| None);
    assert_eq!(judge(&session(), &empty, &[]), None);
}

#[test]
fn a_set_is_judged_on_every_name_once_the_audit_saw_it_under_one() {
    // Owner `a`'s hold seen on every node, only under `lock:{r}`.
    let held = backing(5, 30, |_, r| (r <= 18).then_some(920));
    let mut on_r = session();
    on_r.also = vec!["q".into()];
    assert_eq!(judge(&on_r, &held, &[]), None);
    // The set's other name, never seen: no node backs it.
    let on_q = on_r.covered().next().unwrap();
    assert_eq!(on_q.resource, "q");
    let broken = judge(&on_q, &held, &[]).expect("a name of the set no node held");
    assert_eq!(broken.nodes.len(), 5);
    assert!(broken.nodes.iter().all(|n| n.expires.is_none()));
    // Alone (not of a set), a name never seen is still not judged.
    let alone = Session {
        also: Vec::new(),
        ..on_q
    };
    assert_eq!(judge(&alone, &held, &[]), None);
}

#[test]
fn a_hold_renewed_out_of_sight_must_be_alive_on_a_majority_while_it_is_used() {
    // Used from 10 to 900 ms; its keys expire at 400 ms (renewed out of
    // sight until then): backed while they live, unbacked after.
    let mut s = session();
    s.deadline_unseen = true;
    let lapsing = backing(3, 30, |_, r| (r <= 7).then_some(400));
    let found = judge(&s, &lapsing, &[]).expect("unbacked once the hold is gone");
    assert_eq!(found.at, ms(403), "round 8, the first read showing it gone");
    // The same hold read with the grant's deadline in force is unbacked at once.
    s.deadline_unseen = false;
    assert_eq!(judge(&s, &lapsing, &[]).map(|u| u.at), Some(ms(53)));
    s.deadline_unseen = true;
    let renewed = backing(3, 30, |_, r| (r <= 18).then_some(u64::from(r) * 50 + 300));
    assert_eq!(judge(&s, &renewed, &[]), None);
}
