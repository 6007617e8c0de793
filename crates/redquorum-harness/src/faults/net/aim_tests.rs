use proptest::prelude::*;

use super::{Aim, Aimed, call_sizes};

/// A call by digest with `keys` keys and `args` arguments, as RESP.
fn call(keys: usize, args: usize) -> Vec<u8> {
    let mut out = format!(
        "*{}\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n${}\r\n{keys}\r\n",
        3 + keys + args,
        keys.to_string().len()
    )
    .into_bytes();
    for _ in 0..keys + args {
        out.extend_from_slice(b"$1\r\nx\r\n");
    }
    out
}

#[test]
fn a_call_is_sized_by_its_keys_and_arguments() {
    let two = [call(1, 4), call(2, 9)].concat();
    assert_eq!(call_sizes(&two).collect::<Vec<_>>(), [5, 11]);
    // Not a call by digest, or its header cut off: not sized.
    assert_eq!(call_sizes(b"*3\r\n$4\r\nEVAL\r\n$1\r\nx\r\n").count(), 0);
    let cut = call(1, 4);
    assert_eq!(call_sizes(&cut[2..]).count(), 0);
}

#[test]
fn a_call_of_two_calls_worth_is_aimed_at_and_one_in_three_of_the_others() {
    let mut aim = Aim::default();
    let small = call(1, 3);
    let aims: Vec<_> = (0..6).map(|_| aim.aimed(&small, true)).collect();
    let one = Some(Aimed::OneInThree);
    assert_eq!(aims, [one, None, None, one, None, None]);
    // Twice the smallest's keys and arguments (4): a batch of two.
    assert_eq!(aim.aimed(&call(2, 6), true), Some(Aimed::Wide));
    assert_eq!(aim.aimed(&call(2, 5), true), None);
    // A chunk without the end of a call by digest is not aimed at.
    assert_eq!(aim.aimed(&call(9, 9)[..10], false), None);
    // Calls of no keys or arguments are not twice one another.
    let mut bare = Aim::default();
    let none = call(0, 0);
    assert_eq!(bare.aimed(&none, true), Some(Aimed::OneInThree));
    assert_eq!(bare.aimed(&none, true), None);
}

proptest! {
    /// Calls of one size are never wide: one in three is aimed at.
    #[test]
    fn calls_of_one_size_get_one_flush_in_three(keys in 0_usize..5, args in 0_usize..20, n in 1_usize..40) {
        let mut aim = Aim::default();
        let one = call(keys, args);
        let aimed = (0..n).filter_map(|_| aim.aimed(&one, true)).collect::<Vec<_>>();
        prop_assert!(aimed.iter().all(|a| *a == Aimed::OneInThree));
        prop_assert_eq!(aimed.len(), n.div_ceil(3));
    }
}
