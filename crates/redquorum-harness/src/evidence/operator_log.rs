//! An operator's calls during a run, as the run records them: inspections
//! (who holds a resource, as a quorum reports) and force-releases (the
//! holder ousted, with a fencing token), each with its interval on the
//! history's clock. What the checker holds them to is in
//! `check/operator.rs`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::micros;

/// The client group whose connections (and faults) the run's operator
/// shares: a partition of this group holds the operator's calls back too.
pub(crate) const OPERATOR_GROUP: usize = 0;

/// What an operator's call did.
///
/// # Examples
///
/// ```
/// let inspect = redquorum_harness::OperatorAction::Inspect {
///     holders: vec![],
///     answered: 5,
///     reported: None,
/// };
/// assert_eq!(inspect.name(), "inspect");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "call")]
#[non_exhaustive]
pub enum OperatorAction {
    /// Read who holds the resource.
    Inspect {
        /// The owner tokens a quorum of nodes reported holding it.
        holders: Vec<String>,
        /// How many nodes answered.
        answered: usize,
        /// Every token an answer held, with how many answers held it (the
        /// inspection's own evidence for `holders`; empty when no answer
        /// held any). `None` in histories written before it was recorded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reported: Option<BTreeMap<String, usize>>,
    },
    /// Released the resource whoever held it.
    ForceRelease {
        /// The fencing token it returned; `None` when it failed (it may
        /// still have freed the resource on some nodes).
        fence: Option<u64>,
    },
    /// Asked whoever held the resource to let go, and waited a while for
    /// it to be free.
    Ask {
        /// Whether it was free when the call returned; `None` when the
        /// call failed.
        freed: Option<bool>,
    },
}

impl OperatorAction {
    /// `inspect`, `force-release` or `ask`.
    ///
    /// # Examples
    ///
    /// ```
    /// let call = redquorum_harness::OperatorAction::ForceRelease { fence: Some(3) };
    /// assert_eq!(call.name(), "force-release");
    /// ```
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            OperatorAction::Inspect { .. } => "inspect",
            OperatorAction::ForceRelease { .. } => "force-release",
            OperatorAction::Ask { .. } => "ask",
        }
    }
}

/// One operator call on one resource, from when it was made to when it
/// returned, on the history's clock.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{OperatorAction, OperatorCall};
/// let call = OperatorCall {
///     resource: "r".into(),
///     start: Duration::from_millis(10),
///     end: Duration::from_millis(12),
///     action: OperatorAction::ForceRelease { fence: Some(7) },
/// };
/// assert!(call.to_string().contains("force-release r"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorCall {
    /// The resource.
    pub resource: String,
    /// When it was made.
    #[serde(with = "micros")]
    pub start: Duration,
    /// When it returned.
    #[serde(with = "micros")]
    pub end: Duration,
    /// What it did.
    #[serde(flatten)]
    pub action: OperatorAction,
}

impl OperatorCall {
    /// True for a force-release of `resource`.
    pub(crate) fn is_force_release_of(&self, resource: &str) -> bool {
        self.resource == resource && matches!(self.action, OperatorAction::ForceRelease { .. })
    }
}

impl fmt::Display for OperatorCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} at {:.3}-{:.3} s",
            self.action.name(),
            self.resource,
            self.start.as_secs_f64(),
            self.end.as_secs_f64()
        )?;
        match &self.action {
            OperatorAction::Inspect {
                holders, answered, ..
            } => {
                write!(f, ": {answered} nodes answered, holders {holders:?}")
            }
            OperatorAction::ForceRelease { fence: Some(fence) } => write!(f, ": fence {fence}"),
            OperatorAction::ForceRelease { fence: None } | OperatorAction::Ask { freed: None } => {
                f.write_str(": failed")
            }
            OperatorAction::Ask { freed: Some(true) } => f.write_str(": freed"),
            OperatorAction::Ask { freed: Some(false) } => f.write_str(": still held"),
        }
    }
}

/// The operator calls of one run, shared by the tasks that make them.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{OperatorAction, OperatorCall, OperatorLog};
/// let log = OperatorLog::default();
/// log.record(OperatorCall {
///     resource: "r".into(),
///     start: Duration::ZERO,
///     end: Duration::from_millis(1),
///     action: OperatorAction::Inspect { holders: vec![], answered: 3, reported: None },
/// });
/// assert_eq!(log.calls().len(), 1);
/// ```
#[derive(Debug, Clone, Default)]
pub struct OperatorLog(Arc<Mutex<Vec<OperatorCall>>>);

impl OperatorLog {
    /// Adds a call.
    ///
    /// # Examples
    ///
    /// See [`OperatorLog`].
    pub fn record(&self, call: OperatorCall) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(call);
    }

    /// Every call so far, in the order recorded.
    ///
    /// # Examples
    ///
    /// See [`OperatorLog`].
    #[must_use]
    pub fn calls(&self) -> Vec<OperatorCall> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
