//! Which planted bug this process runs with ([`activate`], [`active`]),
//! and the guard every patch calls ([`is_active`]).

use super::Mutant;

/// True in the planted-bug build of `tests/mutants.sh`, whose copy of the
/// sources has every patch of `crates/redquorum/mutants/` applied: a build
/// with `--cfg redquorum_mutants` alone has the mutants' names but none of
/// their bugs, and `redquorum mutants` refuses to run on it.
#[cfg(redquorum_mutants)]
pub const PATCHED: bool = option_env!("REDQUORUM_MUTANTS_PATCHED").is_some();

#[cfg(redquorum_mutants)]
static ACTIVE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Selects the planted bug for the whole process (`None`: the real library).
///
/// # Examples
///
/// ```
/// # #[cfg(redquorum_mutants)] {
/// redquorum::mutants::activate(None);
/// # }
/// ```
#[cfg(redquorum_mutants)]
pub fn activate(mutant: Option<Mutant>) {
    let index = mutant.map_or(0, |m| {
        1 + Mutant::ALL.iter().position(|&x| x == m).unwrap_or(0)
    });
    ACTIVE.store(index, std::sync::atomic::Ordering::SeqCst);
}

/// The mutant selected by [`activate`], if any.
///
/// # Examples
///
/// ```
/// # #[cfg(redquorum_mutants)] {
/// redquorum::mutants::activate(None);
/// assert_eq!(redquorum::mutants::active(), None);
/// # }
/// ```
#[cfg(redquorum_mutants)]
#[must_use]
pub fn active() -> Option<Mutant> {
    match ACTIVE.load(std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        index => Mutant::ALL.get(index - 1).copied(),
    }
}

/// True when `mutant` is planted in this process: the guard of every
/// patch (`crates/redquorum/mutants/`), so unused in a build without them.
#[cfg(redquorum_mutants)]
#[allow(dead_code)]
pub(crate) fn is_active(mutant: Mutant) -> bool {
    active() == Some(mutant)
}

/// Always false: without `redquorum_mutants` no mutant exists, and hooks compile away.
#[cfg(not(redquorum_mutants))]
#[inline(always)]
pub(crate) const fn is_active(_mutant: Mutant) -> bool {
    false
}
