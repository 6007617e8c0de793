//! The checker on renewals counted from before the grant, and on holds
//! handed over as lease tickets (an adopter's grant and token).

use super::tests::{ms, values};
use super::*;

#[test]
fn a_renewal_counted_from_before_the_grant_opens_no_window_before_it() {
    // As a watchdog told of a loss (or of a subscriber's reconnect) at once
    // gives: the renewal's deadline is counted from its send less the drift
    // allowance, which may come before the grant the workload recorded, and
    // before the previous holder's release. The holder believes it holds
    // from its grant only.
    let mut a = Session::granted(0, "r", "a", ms(0), ms(10), ms(2400));
    a.release = Some(ms(100));
    let mut b = Session::granted(1, "r", "b", ms(108), ms(124), ms(2565));
    b.extensions.push(crate::evidence::Extension {
        at: ms(92),
        until: ms(2592),
    });
    let verdict = check(&[a.clone(), b.clone()], &values(&[("r", 2)]), &[]);
    assert!(verdict.is_ok(), "{:?}", verdict.violations);
    // Granted inside a's window, it still overlaps.
    b.grant = Some(ms(99));
    let verdict = check(&[a, b], &values(&[("r", 2)]), &[]);
    assert_eq!(verdict.count("overlap"), 1, "{:?}", verdict.violations);
}

#[test]
fn an_adopted_hold_carries_its_old_holders_token_and_no_one_elses() {
    let mut a = Session::granted(0, "r", "a", ms(0), ms(1), ms(1000));
    a.fence = Some(5);
    a.release = Some(ms(100)); // handed over
    let mut b = Session::granted(0, "r", "b", ms(101), ms(120), ms(1100));
    (b.fence, b.adopted_from) = (Some(5), Some("a".into()));
    let verdict = check(&[a.clone(), b.clone()], &values(&[("r", 2)]), &[]);
    assert!(verdict.is_ok(), "{:?}", verdict.violations);
    // The same token on a hold adopted from someone else, or not adopted.
    b.adopted_from = Some("c".into());
    let verdict = check(&[a.clone(), b.clone()], &values(&[("r", 2)]), &[]);
    assert_eq!(verdict.count("fence"), 1, "{:?}", verdict.violations);
    // Both adopters granted at once: an overlap.
    b.adopted_from = Some("a".into());
    let mut c = b.clone();
    (c.owner, c.grant) = ("c2".into(), Some(ms(125)));
    let verdict = check(&[a, b, c], &values(&[("r", 3)]), &[]);
    assert_eq!(verdict.count("overlap"), 1, "{:?}", verdict.violations);
}
