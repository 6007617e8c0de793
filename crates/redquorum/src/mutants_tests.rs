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

#[cfg(not(redquorum_mutants))]
#[test]
fn without_the_cfg_the_lock_script_is_ops_lua_as_written() {
    let ops = include_str!("protocol/scripts/ops.lua");
    assert_eq!(ops_source(ops), ops);
}

#[test]
fn ops_lua_has_the_clock_floor_the_mutants_build_switches() {
    assert_eq!(
        include_str!("protocol/scripts/ops.lua")
            .matches(CLOCK_FLOOR)
            .count(),
        1
    );
}

#[cfg(redquorum_mutants)]
#[test]
fn with_the_cfg_ops_lua_runs_between_the_prelude_and_the_postlude_its_floor_switchable() {
    let ops = include_str!("protocol/scripts/ops.lua");
    let source = ops_source(ops);
    assert!(source.starts_with("-- Mutants only"));
    let ops = ops.replace(CLOCK_FLOOR, FLOOR_UNLESS_FLOORLESS);
    let wrapped = format!("local answers = (function()\n{ops}\nend)()\n");
    assert!(source.contains(&wrapped));
    assert!(source.ends_with("return answers\n"));
}
