use std::time::Duration;

use super::*;
use crate::evidence::{AuditRead, AuditRound, CounterTrack};

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Rounds every 50 ms from 0 on `nodes` nodes (node `n` read at `+n` ms),
/// each node's counter of `lock:{r}:fence` as `counter(node)` says, from
/// round `from` on (0 before).
fn backing(nodes: usize, rounds: u32, from: u32, counter: impl Fn(usize) -> u64) -> Backing {
    let read = |node: usize, round: u32| {
        let sent = ms(u64::from(round) * 50 + node as u64);
        AuditRead {
            sent,
            at: sent + ms(1),
        }
    };
    Backing {
        rounds: (0..rounds)
            .map(|r| AuditRound {
                reads: (0..nodes).map(|n| Some(read(n, r))).collect(),
            })
            .collect(),
        holds: Vec::new(),
        counters: (0..nodes)
            .filter(|n| counter(*n) > 0)
            .map(|node| CounterTrack {
                node,
                key: "lock:{r}:fence".into(),
                changes: vec![(from, counter(node))],
            })
            .collect(),
    }
}

/// Granted at 120 ms (after round 2's reads) with token 40.
fn holder() -> Session {
    let mut s = Session::granted(0, "r", "a", ms(100), ms(120), ms(900));
    s.fence = Some(40);
    s
}

#[test]
fn a_token_a_quorum_of_counters_holds_is_backed_and_a_minority_short_is_allowed() {
    // Nodes 0..3 of 5 hold 40 from round 2; 3 and 4 lag (allowed: 2 = N − quorum).
    let counters = backing(5, 10, 2, |n| if n < 3 { 40 } else { 39 });
    assert_eq!(unbacked_token(&counters, &[], &holder(), ms(100)), None);
    // A later, higher counter backs it too.
    let higher = backing(5, 10, 2, |n| if n < 3 { 77 } else { 0 });
    assert_eq!(unbacked_token(&higher, &[], &holder(), ms(100)), None);
}

#[test]
fn a_token_no_quorum_holds_is_unbacked_naming_the_nodes_at_their_first_read() {
    let counters = backing(5, 10, 2, |n| if n < 2 { 40 } else { 39 });
    let shown = unbacked_token(&counters, &[], &holder(), ms(100)).expect("unbacked");
    assert_eq!(shown.len(), 3);
    // Round 3 is the first read sent after the grant (150 ms + node).
    assert_eq!(
        shown[0],
        CounterShown {
            node: 2,
            value: 39,
            at: ms(153)
        }
    );
    // No counter at all (a write-back never made).
    let none = backing(5, 10, 2, |_| 0);
    assert_eq!(
        unbacked_token(&none, &[], &holder(), ms(100)).map(|v| v.len()),
        Some(5)
    );
}

#[test]
fn a_counter_written_only_after_the_first_read_is_against_and_a_loss_excuses_its_node() {
    // The counters reach 40 only at round 6, after the first reads.
    let late = backing(5, 10, 6, |_| 40);
    assert!(unbacked_token(&late, &[], &holder(), ms(100)).is_some());
    // A fence-loss on 3 of the nodes during the session: 2 left, both short.
    let loss = FaultEvent::new(FaultKind::FenceLoss, vec![0, 1, 2], ms(110), ms(130));
    assert_eq!(unbacked_token(&late, &[loss], &holder(), ms(100)), None);
    // One on another resource's time, long before: no excuse.
    let before = FaultEvent::new(FaultKind::FenceLoss, vec![0, 1, 2], ms(0), ms(50));
    assert!(unbacked_token(&late, &[before], &holder(), ms(100)).is_some());
}

#[test]
fn holders_without_a_token_and_histories_without_counters_are_not_judged() {
    let none = backing(5, 10, 2, |_| 0);
    let mut tokenless = holder();
    tokenless.fence = None;
    assert_eq!(unbacked_token(&none, &[], &tokenless, ms(100)), None);
    let values = Default::default();
    let sessions = [holder()];
    let evidence = Evidence {
        backing: &none,
        ..Evidence::new(&sessions, &values)
    };
    assert!(violations(&evidence).is_empty(), "no counter was ever read");
    let some = backing(5, 10, 2, |n| u64::from(n == 0) * 40);
    let evidence = Evidence {
        backing: &some,
        ..Evidence::new(&sessions, &values)
    };
    assert_eq!(violations(&evidence).len(), 1);
}

/// A hold adopted from a lease ticket carries its old holder's token,
/// written back when that holder was granted: a fence-loss after that
/// write-back, even before the adopter began, excuses the nodes it struck
/// (the next proposals start from the node's clock).
#[test]
fn an_adopted_tokens_counters_lost_before_the_adoption_are_excused() {
    // Nodes 0 to 2 lost their counters: only 3 and 4 show the token.
    let late = backing(5, 10, 2, |n| if n < 3 { 0 } else { 40 });
    let loss = FaultEvent::new(FaultKind::FenceLoss, vec![0, 1, 2], ms(110), ms(130));
    let old = holder();
    let mut adopter = Session::granted(0, "r", "b", ms(300), ms(320), ms(900));
    adopter.fence = Some(40);
    adopter.adopted_from = Some("a".into());
    let sessions = [old, adopter];
    let by_owner: HashMap<&str, &Session> =
        sessions.iter().map(|s| (s.owner.as_str(), s)).collect();
    let issued = issued_at(&sessions[1], &by_owner);
    assert_eq!(issued, ms(100), "from the old holder's start");
    assert_eq!(
        unbacked_token(&late, std::slice::from_ref(&loss), &sessions[1], issued),
        None
    );
    // From the adopter's own start, the loss was before: no excuse.
    assert!(unbacked_token(&late, &[loss], &sessions[1], ms(300)).is_some());
    // An adopter with a token of its own (not carried) is judged from its start.
    let mut own = sessions[1].clone();
    own.fence = Some(41);
    assert_eq!(issued_at(&own, &by_owner), ms(300));
}
