//! How often a torture run's operator (`run/operator/`) inspects and
//! force-releases, as the plan (`plan.rs`) carries it.

use std::time::Duration;

/// How often a torture run's operator calls, per kind of call (`None`: never).
///
/// # Examples
///
/// ```
/// assert!(redquorum_harness::OperatorPace::default().is_idle());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OperatorPace {
    /// An inspection of a resource (in turn) every so often.
    pub inspect_every: Option<Duration>,
    /// A force-release of a resource (in turn) every so often.
    pub force_release_every: Option<Duration>,
    /// The calls are the default run's, not asked for: a run whose calls
    /// met no holder is not vacuous for it.
    pub by_default: bool,
}

impl OperatorPace {
    /// Whether the operator makes no call at all (the run has none).
    #[must_use]
    pub fn is_idle(self) -> bool {
        self.inspect_every.is_none() && self.force_release_every.is_none()
    }
}
