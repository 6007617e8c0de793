use super::*;

#[test]
fn names_parse_back_to_their_mutant() {
    for mutant in Mutant::ALL {
        assert_eq!(mutant.name().parse::<Mutant>(), Ok(mutant));
    }
    assert!("bogus".parse::<Mutant>().is_err());
}

#[cfg(not(redquorum_mutants))]
#[test]
fn without_the_cfg_no_mutant_is_ever_active() {
    assert!(Mutant::ALL.iter().all(|&m| !is_active(m)));
}
