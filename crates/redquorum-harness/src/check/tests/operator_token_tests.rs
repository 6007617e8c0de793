//! Unit tests of the force-release's token promise (`operator.rs`): above
//! every holder granted before the call, below every holder whose token
//! was issued after it.

use super::tests::{faults_of, force, ms, two_holders};
use super::*;

#[test]
fn a_force_release_token_must_sit_between_earlier_and_later_holders() {
    let sessions = two_holders();
    assert!(faults_of(&sessions, &[force(100, Some(7))], &[]).is_empty());
    assert_eq!(
        faults_of(&sessions, &[force(100, Some(5))], &[]),
        [OperatorFault::FenceNotAbove]
    );
    assert_eq!(
        faults_of(&sessions, &[force(100, Some(9))], &[]),
        [OperatorFault::FenceNotBelow]
    );
    // A failed force-release promises nothing.
    assert!(faults_of(&sessions, &[force(100, None)], &[]).is_empty());
}

/// Seen in a torture run (`ask-unheard` seed 3): `a` began to acquire
/// before a force-release ended and was granted after it with a lower
/// token (allowed: docs/locks.md); `b` adopted `a`'s ticket later and
/// carries `a`'s token on. `b` did not begin after the force-release.
#[test]
fn an_adopter_carrying_a_token_issued_before_a_force_release_ended_is_not_later() {
    let mut a = Session::granted(0, "r", "a", ms(50), ms(110), ms(900));
    a.fence = Some(5);
    a.release = Some(ms(300));
    let mut b = Session::granted(0, "r", "b", ms(301), ms(305), ms(1200));
    b.fence = Some(5);
    b.adopted_from = Some("a".into());
    let sessions = vec![a, b];
    assert!(faults_of(&sessions, &[force(100, Some(7))], &[]).is_empty());
    // An adopter whose token is its own (not the adopted hold's) is judged.
    let mut sessions = sessions;
    sessions[1].fence = Some(6);
    assert_eq!(
        faults_of(&sessions, &[force(100, Some(7))], &[]),
        [OperatorFault::FenceNotBelow]
    );
}
