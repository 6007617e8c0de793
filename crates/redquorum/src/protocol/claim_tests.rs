use super::*;

fn claim(kind: Kind) -> Claim {
    Claim::new(
        kind,
        "r",
        ResourceKeys::new("lock:", "r"),
        OwnerToken::random(),
        Duration::from_millis(1500),
    )
}

fn texts(op: &Op) -> Vec<String> {
    op.args.iter().map(|a| a.as_string().unwrap()).collect()
}

#[test]
fn a_plain_hold_uses_the_plain_operations_with_its_token_and_ttl() {
    let plain = claim(Kind::Lock);
    let acquire = plain.acquire(true);
    assert_eq!(acquire.code, Code::PlainAcquire);
    assert_eq!(texts(&acquire), [plain.token.to_string(), "1500".into()]);
    let keys = vec![plain.keys.lock.clone(), plain.keys.fence.clone()];
    assert_eq!(acquire.keys, keys);
    // Unfenced: no fence key.
    assert_eq!(plain.acquire(false).keys, vec![plain.keys.lock.clone()]);
    assert_eq!(plain.extend().code, Code::PlainExtend);
    assert_eq!(texts(&plain.extend())[1], "1500");
    assert_eq!(plain.release().code, Code::PlainRelease);
    assert_eq!(plain.unwind().code, Code::PlainRelease);
    // Anything a string record cannot carry takes the full operations.
    let noted = claim(Kind::Lock).with_meta("h:1:note");
    let delayed = claim(Kind::Lock).with_delay(Duration::from_secs(1));
    let two = claim(Kind::Lock).and(&ResourceKeys::new("lock:", "s"), Kind::Lock, true);
    for full in [noted, delayed, two, claim(Kind::Write), claim(Kind::Leader)] {
        assert_eq!(full.acquire(true).code, Code::Acquire, "{full:?}");
        assert_eq!(full.extend().code, Code::Extend);
        assert_eq!(full.release().code, Code::Release);
    }
    // A lock-delay of zero is no lock-delay.
    let undelayed = claim(Kind::Lock).with_delay(Duration::ZERO);
    assert_eq!(undelayed.acquire(true).code, Code::PlainAcquire);
}

#[test]
fn an_acquire_names_its_token_ttl_owner_flags_meta_delay_fences_and_kinds() {
    let write = claim(Kind::Write);
    let args = texts(&write.acquire(true));
    assert_eq!(args[0], write.token.to_string());
    assert_eq!(
        args[1..],
        ["1500", "", "p", "", "0", "1", "write"].map(String::from)
    );
    let keys = vec![write.keys.lock.clone(), write.keys.fence.clone()];
    assert_eq!(write.acquire(true).keys, keys);
    // Unfenced: no fence key, and 0 fences.
    assert_eq!(texts(&write.acquire(false))[6], "0");
    assert_eq!(write.acquire(false).keys.len(), 1);
    let writer = claim(Kind::Write).waiting();
    assert_eq!(texts(&writer.acquire(false))[3], "i");
    let held = claim(Kind::Reentrant)
        .of_owner("abc")
        .with_meta("h:1:note")
        .with_delay(Duration::from_secs(2));
    let args = texts(&held.acquire(true));
    let expected = ["abc", "p", "h:1:note", "2000", "1", "reentrant"].map(String::from);
    assert_eq!(args[2..8], expected);
}

#[test]
fn a_claim_on_several_locks_takes_them_all_and_fences_those_asked() {
    let other = ResourceKeys::new("lock:", "s");
    let two = claim(Kind::Lock)
        .and(&other, Kind::Lock, true)
        .and_key("lock:{r}:slot:0".into(), Kind::Slot);
    let acquire = two.acquire(true);
    assert_eq!(acquire.keys.len(), 5, "3 locks, 2 fences");
    assert_eq!(
        texts(&acquire)[6..],
        ["2", "lock", "lock", "slot"].map(String::from)
    );
    assert_eq!(two.extend().keys.len(), 3);
    assert_eq!(two.release().keys.len(), 3);
    let commit = two.commit(FenceToken::new(7));
    assert_eq!(commit.keys.len(), 5);
    assert_eq!(texts(&commit)[2], "3");
    assert_eq!(two.propose().keys.len(), 5);
    assert_eq!(texts(&two.propose())[1], "3");
}

#[test]
fn a_waiting_writer_keeps_its_intent_when_unwinding_but_not_when_releasing() {
    let writer = claim(Kind::Write).waiting();
    assert_eq!(texts(&writer.unwind())[1], "0");
    assert_eq!(texts(&writer.release())[1], "1");
    let once = claim(Kind::Write);
    assert_eq!(texts(&once.unwind())[1], "1");
}

#[test]
fn operations_carry_the_keys_they_touch() {
    let c = claim(Kind::Lock);
    assert_eq!(c.acquire(true).keys.len(), 2);
    assert_eq!(c.commit(FenceToken::new(9)).keys.len(), 2);
    assert_eq!(c.extend().keys, vec![c.keys.lock.clone()]);
    assert_eq!(c.release().keys, vec![c.keys.lock.clone()]);
    assert_eq!(
        c.propose().keys,
        vec![c.keys.lock.clone(), c.keys.fence.clone()]
    );
}

#[test]
fn a_failed_adoption_moves_the_hold_back_for_no_longer_than_the_ticket_said() {
    let old = crate::protocol::token::OwnerToken::random();
    let until = std::time::SystemTime::now() + Duration::from_secs(5);
    let adopting = claim(Kind::Lock).adopting(old, until);
    let back = adopting.unwind();
    assert_eq!(back.code, Code::MoveBack);
    assert_eq!(back.keys, vec![adopting.keys.lock.clone()]);
    let args = texts(&back);
    assert_eq!(
        args[..3],
        [adopting.token.to_string(), old.to_string(), "lock".into()]
    );
    let cap: i64 = args[3].parse().unwrap();
    assert!((1..=5000).contains(&cap), "{cap}");
    // A ticket already run out: the hold goes back for a millisecond.
    let past = std::time::SystemTime::now() - Duration::from_secs(1);
    assert_eq!(
        texts(&claim(Kind::Lock).adopting(old, past).unwind())[3],
        "1"
    );
    // Its release is a plain one.
    assert_eq!(adopting.release().code, Code::PlainRelease);
}
