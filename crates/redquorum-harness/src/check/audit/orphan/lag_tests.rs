//! The orphan-key rule on a loaded machine: how long the holds measured
//! on a removal's path (`path_lag.rs`) let its key live, and the `exec`
//! whose write or owed removal a held proxy kept past its exit.

use super::*;

/// The orphan-key violations of `key` with the path lags `lags` measured.
fn orphans_with_lags(key: KeyLife, sessions: &[Session], lags: &[RuntimeLag]) -> usize {
    orphans_in(key, sessions, &[], lags).len()
}

/// Client group `group`'s path to node `node` held (by its proxy, or with
/// `None` its client runtime) from `from` to `to` ms.
fn held(node: Option<usize>, group: usize, from: u64, to: u64) -> RuntimeLag {
    RuntimeLag {
        group,
        node,
        at: ms(to),
        late: ms(to - from),
    }
}

#[test]
fn a_removal_may_land_as_much_later_as_the_holds_on_its_path_kept_it() {
    // Released at 1000 ms (group 0), the key still there at 2600 ms: past
    // the slack, with nothing measured, an orphan.
    let local = used_until_1000_ended_at_2000(false);
    let sessions = std::slice::from_ref(&local);
    let found = |lags: &[RuntimeLag]| orphans_with_lags(key_of_x(2600), sessions, lags);
    assert_eq!(found(&[]), 1);
    // The proxy in front of the key's node was held from 1500 to 2700 ms:
    // the release, sent late within its slack, may have waited there.
    assert_eq!(found(&[held(Some(0), 0, 1500, 2700)]), 0);
    // So may the group's own runtime, which sends it.
    assert_eq!(found(&[held(None, 0, 1500, 2700)]), 0);
    // Held up where the release cannot have been: another node's proxy,
    // another group's path, over before it was due, begun after its slack.
    assert_eq!(found(&[held(Some(1), 0, 1500, 2700)]), 1);
    assert_eq!(found(&[held(Some(0), 1, 1500, 2700)]), 1);
    assert_eq!(found(&[held(Some(0), 0, 100, 900)]), 1);
    assert_eq!(found(&[held(Some(0), 0, 2100, 2700)]), 1);
    // Only as long as was measured and the catch-up after it: a hold over
    // at 2400 covers 2600, not 3000.
    assert_eq!(found(&[held(Some(0), 0, 1500, 2400)]), 0);
    assert_eq!(
        orphans_with_lags(key_of_x(3000), sessions, &[held(Some(0), 0, 1500, 2400)]),
        1
    );
    // A dropped release leaves the key to its TTL, past any such hold.
    assert_eq!(
        orphans_with_lags(key_of_x(4000), sessions, &[held(Some(0), 0, 1500, 2700)]),
        1
    );
}

#[test]
fn an_unwound_attempts_key_may_wait_out_the_holds_on_its_path() {
    // Set at 100 ms by an attempt (group 0) that ended at 1500 ms: due then.
    let late = [refused("r", 50, Some(1500))];
    let found = |lags: &[RuntimeLag]| orphans_with_lags(unwound(100, 3000), &late, lags);
    assert_eq!(found(&[]), 1);
    assert_eq!(found(&[held(Some(0), 0, 2000, 3100)]), 0);
    // Over at 2400: forwarded by 2900, the catch-up after it.
    assert_eq!(found(&[held(Some(0), 0, 2000, 2400)]), 1);
}

#[test]
fn a_proxy_back_from_a_long_hold_forwards_its_backlog_within_the_catch_up() {
    // The seed-3 control of 2026-12-07: an unwind due at 1500 ms (its
    // attempt's end) waited in the proxy in front of node 0, held from 1300
    // to 2600 ms on a starved machine; the key was last seen 230 ms after
    // the proxy woke. Before the catch-up, an orphan; a key still there
    // [`CATCH_UP`](path_lag::CATCH_UP) after the wake is one still.
    let late = [refused("r", 50, Some(1500))];
    let proxy = [held(Some(0), 0, 1300, 2600)];
    assert_eq!(orphans_with_lags(unwound(100, 2830), &late, &proxy), 0);
    assert_eq!(orphans_with_lags(unwound(100, 3200), &late, &proxy), 1);
    assert_eq!(orphans_with_lags(unwound(100, 2830), &late, &[]), 1);
}

#[test]
fn an_exec_attempts_write_held_in_its_proxy_past_its_exit_lives_its_ttl() {
    // `redquorum exec` (group 3) tried from 1000 ms and exited refused at
    // 2000 ms; the proxy in front of node 0 was held from 1800 to 3300 ms
    // and forwarded its acquire then: the key, set at 3310, lived its TTL,
    // with nobody left to unwind it.
    let found = |in_own_process: bool, lags: &[RuntimeLag]| {
        let mut attempt = refused("r", 1000, Some(2000));
        attempt.deadline_unseen = in_own_process;
        attempt.group = 3;
        orphans_with_lags(unwound(3310, 5300), &[attempt], lags)
    };
    let proxy = held(Some(0), 3, 1800, 3300);
    assert_eq!(found(true, &[proxy]), 0);
    // Without the hold, or with a hold begun after its exit, an orphan.
    assert_eq!(found(true, &[]), 1);
    assert_eq!(found(true, &[held(Some(0), 3, 2100, 3300)]), 1);
    // A client of the harness's own process unwinds right behind the
    // acquire on the same connection: the hold excuses it only the
    // slack after the chain that kept it.
    assert_eq!(found(false, &[proxy]), 1);
}

#[test]
fn an_unwind_an_exec_owed_a_held_proxy_when_it_exited_is_lost_with_it() {
    // `redquorum exec` (group 3) tried from 1000 ms, its key set on node 0
    // at 1200, and exited refused at 2000 while the proxy in front of node
    // 0 was held (1900 to 3300 ms): the unwind it still owed waited there
    // and ended with the process; the key lives its TTL.
    let found = |in_own_process: bool, lags: &[RuntimeLag]| {
        let mut attempt = refused("r", 1000, Some(2000));
        attempt.deadline_unseen = in_own_process;
        attempt.group = 3;
        orphans_with_lags(unwound(1200, 3190), &[attempt], lags)
    };
    assert_eq!(found(true, &[held(Some(0), 3, 1900, 3300)]), 0);
    assert_eq!(found(true, &[]), 1);
    // Held only before the exit, or after it: the unwind went through.
    assert_eq!(found(true, &[held(Some(0), 3, 1000, 1800)]), 1);
    assert_eq!(found(true, &[held(Some(0), 3, 2100, 3300)]), 1);
    // A client of the harness's own process sends it when the hold ends.
    assert_eq!(found(false, &[held(Some(0), 3, 1900, 2300)]), 1);
}
