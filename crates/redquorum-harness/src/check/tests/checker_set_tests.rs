//! The checker on holds of several resources at once (an all-of set).

use super::tests::{ms, values};
use super::*;

#[test]
fn a_hold_of_a_set_overlaps_on_each_of_its_names_and_counts_one_write() {
    // `a` holds r1 and r2 (an all-of set), and wrote r1's counter once.
    let mut a = Session::granted(0, "r1", "a", ms(0), ms(1), ms(100));
    a.also = vec!["r2".into()];
    let inside = Session::granted(1, "r2", "b", ms(10), ms(50), ms(200));
    let verdict = check(
        &[a.clone(), inside.clone()],
        &values(&[("r1", 1), ("r2", 1)]),
        &[],
    );
    let covered = a.covered().next().unwrap();
    assert_eq!(
        verdict.violations,
        vec![Violation::Overlap {
            first: Box::new(covered),
            second: Box::new(inside)
        }]
    );
    // After it, on either name: no overlap, and each counter is its writers'.
    let after = Session::granted(1, "r2", "b", ms(100), ms(101), ms(200));
    let verdict = check(&[a, after], &values(&[("r1", 1), ("r2", 1)]), &[]);
    assert!(verdict.is_ok(), "{:?}", verdict.violations);
}
