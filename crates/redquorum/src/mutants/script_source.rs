//! What planted bugs change in the lock script's text and its NOSCRIPT
//! fallback (the mutants builds' prelude and postlude around `ops.lua`).

/// The lock script's source: with `redquorum_mutants`, `protocol/scripts/mutants_prelude.lua`
/// first (it turns the planted operation codes into ordinary ones acting on
/// another owner's hold), then `ops.lua` run as a function, then
/// `protocol/scripts/mutants_postlude.lua` (it undoes what a planted code must not
/// have done); without it, `ops.lua` as written. In `ops.lua` the fence
/// proposal's clock floor becomes conditional on the prelude's `floorless`
/// (set by the codes `F` and `P`), the one change made inside it.
pub(crate) fn ops_source(source: &'static str) -> String {
    #[cfg(redquorum_mutants)]
    {
        let source = source.replace(CLOCK_FLOOR, FLOOR_UNLESS_FLOORLESS);
        format!(
            "{}\nlocal answers = (function()\n{source}\nend)()\n{}\nreturn answers\n",
            include_str!("../protocol/scripts/mutants_prelude.lua"),
            include_str!("../protocol/scripts/mutants_postlude.lua")
        )
    }
    #[cfg(not(redquorum_mutants))]
    {
        source.to_owned()
    }
}

/// The clock floor of `ops.lua`'s fence proposal, and what mutants builds
/// put in its place (`floorless` is the prelude's).
#[cfg(any(redquorum_mutants, test))]
pub(super) const CLOCK_FLOOR: &str = "math.max(stored + 1, clock() * 1024)";
#[cfg(any(redquorum_mutants, test))]
pub(super) const FLOOR_UNLESS_FLOORLESS: &str =
    "math.max(stored + 1, floorless and 1024 or clock() * 1024)";
