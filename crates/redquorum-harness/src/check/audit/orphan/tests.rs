use super::*;
use crate::check::checker::{attempts_by_token, granted_owners};
use crate::evidence::RuntimeLag;
use crate::faults::{FaultEvent, FaultKind};

fn ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A never-granted owner's key on `{r}`, set at `set` ms, last seen at `seen`.
fn unwound(set: u64, seen: u64) -> KeyLife {
    KeyLife {
        node: 0,
        key: "p:{r}".into(),
        owner: "never-granted".into(),
        first_seen: ms(set),
        last_seen: ms(seen),
        last_sent: None,
        age: ms(seen - set),
        gone: None,
        left: None,
        back_after: None,
    }
}

/// A refused attempt on `resource` from `start` to `ended` ms.
fn refused(resource: &str, start: u64, ended: Option<u64>) -> Session {
    let mut session = Session::refused(0, resource, ms(start), "unavailable");
    session.ended = ended.map(ms);
    session
}

/// The orphan-key violations of `key`, judged as the checker judges it
/// among `sessions` (granted ones by their owner token) under `faults`.
fn orphans_of(key: KeyLife, sessions: &[Session], faults: &[FaultEvent]) -> Vec<Violation> {
    orphans_in(key, sessions, faults, &[])
}

/// As [`orphans_of`], with the path lags `lags` measured too.
fn orphans_in(
    key: KeyLife,
    sessions: &[Session],
    faults: &[FaultEvent],
    lags: &[RuntimeLag],
) -> Vec<Violation> {
    let (keys, protected) = ([key], std::collections::BTreeMap::new());
    let evidence = Evidence {
        keys: &keys,
        faults,
        lags,
        ..Evidence::new(sessions, &protected)
    };
    orphans(
        &evidence,
        &granted_owners(evidence.sessions),
        &attempts_by_token(evidence.sessions),
    )
}

fn orphan_count(key: KeyLife, sessions: &[Session]) -> usize {
    orphans_of(key, sessions, &[]).len()
}

#[test]
fn an_unwound_key_may_live_the_slack_after_its_attempt_ended() {
    // Set at 100 ms by an attempt that ended (starved) at 1500 ms.
    let late = [refused("r", 50, Some(1500))];
    assert_eq!(orphan_count(unwound(100, 2400), &late), 0);
    // Still there more than the slack after the attempt ended: never unwound.
    assert_eq!(orphan_count(unwound(100, 2600), &late), 1);
    // Set before the history began, no attempt known: by its age.
    let older = KeyLife {
        age: ms(1200),
        ..unwound(0, 50)
    };
    assert_eq!(orphan_count(older, &[]), 1);
}

#[test]
fn only_an_attempt_on_the_resource_running_when_the_key_was_set_moves_the_due_time() {
    let set_after_it = [refused("r", 50, Some(90)), refused("r", 300, Some(2000))];
    let other_resource = [refused("s", 50, Some(2000))];
    let unknown_end = [refused("r", 50, None)];
    // A semaphore's slot key names its resource too.
    let slot = KeyLife {
        key: "p:{r}:slot:1".into(),
        ..unwound(100, 2400)
    };
    assert_eq!(orphan_count(slot, &[refused("r", 50, Some(1500))]), 0);
    for sessions in [&set_after_it[..], &other_resource, &unknown_end, &[]] {
        // Measured from the set time, as without a known attempt.
        assert_eq!(
            orphan_count(unwound(100, 1050), sessions),
            0,
            "{sessions:?}"
        );
        assert_eq!(
            orphan_count(unwound(100, 1200), sessions),
            1,
            "{sessions:?}"
        );
    }
}

#[test]
fn a_fault_around_the_end_of_any_attempt_that_may_have_set_the_key_excuses_it() {
    // Two attempts were running when the key was set at 100 ms: one
    // ended at 200 ms, during a reset of its node (its unwind lost),
    // one ended (starved) at 1500 ms, long after the reset.
    let attempts = [refused("r", 50, Some(200)), refused("r", 60, Some(1500))];
    let reset = FaultEvent::new(FaultKind::Reset, vec![0], ms(150), ms(250));
    let found = |faults: &[FaultEvent]| orphans_of(unwound(100, 2600), &attempts, faults).len();
    assert_eq!(found(&[reset]), 0);
    // Without the reset it outlived both attempts: never unwound.
    assert_eq!(found(&[]), 1);
}

/// A granted hold of owner `x` on `r` whose use ended (`release`) at
/// 1000 ms, recorded as ended at 2000 ms.
fn used_until_1000_ended_at_2000(in_own_process: bool) -> Session {
    let mut s = Session::granted(0, "r", "x", ms(0), ms(10), ms(1000));
    s.release = Some(ms(1000));
    s.ended = Some(ms(2000));
    s.deadline_unseen = in_own_process;
    s
}

fn key_of_x(seen: u64) -> KeyLife {
    KeyLife {
        owner: "x".into(),
        ..unwound(10, seen)
    }
}

#[test]
fn a_hold_in_a_process_of_its_own_is_due_to_go_when_that_process_exited() {
    let found = |owner: &Session, key: KeyLife| orphan_count(key, std::slice::from_ref(owner));
    // `exec` releases after its command's last step: by its exit.
    let exec = used_until_1000_ended_at_2000(true);
    assert_eq!(found(&exec, key_of_x(2900)), 0);
    assert_eq!(found(&exec, key_of_x(3100)), 1);
    // A holder in the harness's own process released at `release`.
    let local = used_until_1000_ended_at_2000(false);
    assert_eq!(found(&local, key_of_x(2100)), 1);
}

#[test]
fn a_key_counts_as_seen_when_the_read_that_saw_it_was_sent() {
    let local = used_until_1000_ended_at_2000(false);
    let found = |key: KeyLife| orphan_count(key, std::slice::from_ref(&local));
    // Answered at 2600 ms, more than the slack after the release at
    // 1000 ms, by a read sent at 1900 ms: it may have gone at 1901.
    let slow_read = KeyLife {
        last_sent: Some(ms(1900)),
        ..key_of_x(2600)
    };
    assert_eq!(found(slow_read), 0);
    // Sent at 2100 ms: surely there past the slack.
    let late = KeyLife {
        last_sent: Some(ms(2100)),
        ..key_of_x(2600)
    };
    assert_eq!(found(late), 1);
}

#[test]
fn a_granted_holds_end_does_not_move_a_never_granted_keys_due_time() {
    let granted = used_until_1000_ended_at_2000(true);
    assert_eq!(orphan_count(unwound(100, 1200), &[granted]), 1);
}

/// A key of owner `t`, set at `set` ms, last seen at `seen`.
fn key_of_t(set: u64, seen: u64) -> KeyLife {
    KeyLife {
        owner: "t".into(),
        ..unwound(set, seen)
    }
}

#[test]
fn a_key_of_a_told_attempt_is_due_when_that_attempt_ended_not_the_last_one_running() {
    // Attempt "t" (told by the lock) ended at 200 ms; another attempt on
    // the same resource, running when the key was set, ended at 1500 ms.
    let mut own = refused("r", 50, Some(200));
    own.tried = vec!["t".into()];
    let other = refused("r", 60, Some(1500));
    let sessions = [own.clone(), other.clone()];
    assert_eq!(orphan_count(key_of_t(100, 1100), &sessions), 0);
    // Past its own attempt's end by more than the slack: an orphan, though
    // the other attempt (its end unexpired) would have excused it untold.
    assert_eq!(orphan_count(key_of_t(100, 1300), &sessions), 1);
    own.tried.clear();
    assert_eq!(orphan_count(key_of_t(100, 1300), &[own, other]), 0);
}

#[test]
fn a_retried_attempts_key_is_due_by_the_grant_that_followed() {
    // The acquire tried "t", was refused, retried with "g" and was granted
    // at 400 ms: "t"'s keys were unwound before the retry.
    let mut granted = Session::granted(0, "r", "g", ms(0), ms(400), ms(5000));
    granted.tried = vec!["t".into(), "g".into()];
    assert_eq!(orphan_count(key_of_t(100, 1300), &[granted.clone()]), 0);
    assert_eq!(orphan_count(key_of_t(100, 1500), &[granted]), 1);
}

#[test]
fn a_fault_around_a_told_attempts_end_excuses_its_key_as_long_as_it_can() {
    let mut own = refused("r", 50, Some(200));
    own.tried = vec!["t".into()];
    let found =
        |faults: &[FaultEvent]| orphans_of(key_of_t(100, 2000), std::slice::from_ref(&own), faults);
    // A reset of its node as it ended may have lost the unwind: the key lives to its TTL.
    let reset = FaultEvent::new(FaultKind::Reset, vec![0], ms(150), ms(250));
    assert!(found(&[reset]).is_empty());
    // A stall only delays it: excused until the slack after the stall healed.
    let stall = FaultEvent::new(FaultKind::Stall, vec![0], ms(150), ms(600));
    let late = found(&[stall]);
    assert_eq!(late.len(), 1);
    // The violation names the attempt that set the key.
    let attempt = match &late[0] {
        Violation::OrphanKey { attempt, .. } => attempt.as_deref().map(|s| s.tried.clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(attempt, Some(vec!["t".to_owned()]));
}

/// Seen in a loaded run: an `exec` holder was granted by four nodes while a
/// stall held its write to the fifth, left its hold to expire (no release)
/// and exited; the stall delivered the write when it healed, after the
/// exit, and the key lived its whole TTL from then, past the deadline plus
/// the slack. A write that landed after its owner's last one could be sent
/// is one a fault held back, and lives its TTL from when it landed.
#[test]
fn a_granted_holders_write_a_fault_held_back_past_its_last_write_lives_its_ttl() {
    // Granted at 10, deadline 3 000; `exec`'s left its hold to expire and
    // exited at 200, the other released at 200.
    let holder = |in_own_process: bool| {
        let mut owner = Session::granted(0, "r", "x", ms(0), ms(10), ms(3000));
        owner.release = (!in_own_process).then_some(ms(200));
        owner.ended = in_own_process.then_some(ms(200));
        owner.deadline_unseen = in_own_process;
        owner
    };
    // The owner's key set at `set` ms, seen at 4 100.
    let found = |owner: &Session, set: u64, faults: &[FaultEvent]| {
        let key = KeyLife {
            owner: "x".into(),
            ..unwound(set, 4100)
        };
        orphans_of(key, std::slice::from_ref(owner), faults).len()
    };
    let stall = |node, end| FaultEvent::new(FaultKind::Stall, vec![node], ms(5), ms(end));
    for owner in [holder(true), holder(false)] {
        let exec = owner.deadline_unseen;
        assert_eq!(found(&owner, 2000, &[]), 1, "no fault held it, exec {exec}");
        // A stall of its node from before its grant, healed at 1 500: the
        // write set at 2 000 landed within the slack after it.
        assert_eq!(found(&owner, 2000, &[stall(0, 1500)]), 0, "exec {exec}");
        // Another node's stall held nothing of this one's.
        assert_eq!(found(&owner, 2000, &[stall(1, 1500)]), 1, "exec {exec}");
        // Healed more than the slack before the write landed.
        assert_eq!(found(&owner, 2000, &[stall(0, 900)]), 1, "exec {exec}");
    }
    // Without a release, set before its deadline: maybe an extension, not
    // a late write, and the stall had healed long before the removal was due.
    let mut expiring = holder(false);
    expiring.release = None;
    assert_eq!(found(&expiring, 2000, &[stall(0, 1500)]), 1);
}

#[test]
fn an_untold_attempt_in_a_process_of_its_own_owes_a_held_back_node_no_more_than_its_exit() {
    // `redquorum exec` tried from 50 ms and exited refused at 1000 ms; its
    // attempt's key, set at 100 ms on node 0, lived its TTL there, while a
    // script flush held node 0's answers back around its exit: the unwind
    // it owed that node was cut when it exited (bounded by the node
    // timeout), as for a granted hold of its own. Its tokens are not told.
    let flush = || {
        let mut flush = FaultEvent::new(FaultKind::ScriptFlush, vec![0], ms(600), ms(1100));
        flush.held_answers = Some(ms(200));
        flush
    };
    let found = |in_own_process: bool, faults: &[FaultEvent]| {
        let mut attempt = refused("r", 50, Some(1000));
        attempt.deadline_unseen = in_own_process;
        orphans_of(unwound(100, 2600), &[attempt], faults).len()
    };
    assert_eq!(found(true, &[flush()]), 0);
    // A client in the harness's process sends its unwind again after the
    // NOSCRIPT: held back only the longest hold after the flush healed.
    assert_eq!(found(false, &[flush()]), 1);
    // No fault: the process's exit is no excuse.
    assert_eq!(found(true, &[]), 1);
}

#[test]
fn an_untold_attempts_write_held_back_past_its_exit_is_still_its_own() {
    // `redquorum exec` tried from 4950 ms and exited refused at 7400 ms,
    // while node 0 was paused (7100..8000 ms): its acquire, written before
    // the pause, landed when the node woke, at 7990 ms, after the process
    // had gone with the unwind it still owed that node. The key then lived
    // its TTL (to 9990 ms). No attempt on the resource ran when it was
    // set: the one that set it ended before, its write held back.
    let pause = || FaultEvent::new(FaultKind::Pause, vec![0], ms(7100), ms(8000));
    let found = |in_own_process: bool, faults: &[FaultEvent]| {
        let mut attempt = refused("r", 4950, Some(7400));
        attempt.deadline_unseen = in_own_process;
        orphans_of(unwound(7990, 9900), &[attempt], faults).len()
    };
    assert_eq!(found(true, &[pause()]), 0);
    // A client in the harness's process sends its unwind on the same
    // connection, behind its acquire: excused only the slack after the heal.
    assert_eq!(found(false, &[pause()]), 1);
    // No fault held the write back: no attempt explains a key set then.
    assert_eq!(found(true, &[]), 1);
    // A pause of another node held back nothing of node 0's.
    let elsewhere = [FaultEvent::new(
        FaultKind::Pause,
        vec![1],
        ms(7100),
        ms(8000),
    )];
    assert_eq!(found(true, &elsewhere), 1);
    // Set long after the pause healed: not a write it held back.
    let mut attempt = refused("r", 4950, Some(7400));
    attempt.deadline_unseen = true;
    assert_eq!(
        orphans_of(unwound(9300, 11200), &[attempt], &[pause()]).len(),
        1
    );
}

#[test]
fn a_handed_over_hold_goes_when_it_is_adopted_and_lives_to_its_deadline_when_not() {
    // Owner "old" handed its hold over at 100 ms; its lease ran to 2000 ms.
    let mut old = Session::granted(0, "r", "old", ms(0), ms(10), ms(2000));
    old.release = Some(ms(100));
    let key = |seen: u64| KeyLife {
        owner: "old".into(),
        ..unwound(5, seen)
    };
    let adopter = |granted: bool| {
        let mut s = if granted {
            Session::granted(0, "r", "new", ms(100), ms(300), ms(2300))
        } else {
            let mut s = Session::refused(0, "r", ms(100), "unavailable");
            s.ended = Some(ms(300));
            s
        };
        s.adopted_from = Some("old".into());
        s
    };
    // Adopted at 300 ms: its keys must be gone the slack after the move.
    let adopted = [old.clone(), adopter(true)];
    assert_eq!(orphan_count(key(1200), &adopted), 0);
    assert_eq!(
        orphan_count(key(1400), &adopted),
        1,
        "the move missed a node"
    );
    // Nobody adopted it: nobody's, to its TTL on each node (a renewal sent
    // before the hand-over may have landed after it): the leak check's.
    let unadopted = [old.clone(), adopter(false), adopter(false)];
    assert_eq!(orphan_count(key(1900), &unadopted), 0);
    assert_eq!(orphan_count(key(3100), &unadopted), 0);
    // Not handed over: due at its release.
    assert_eq!(orphan_count(key(1200), &[old]), 1);
}

#[path = "lag_tests.rs"]
mod lag;
