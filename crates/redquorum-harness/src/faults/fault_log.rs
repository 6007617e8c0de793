//! `FaultLog`: what the nemesis did, each fault with its targets and its
//! start and end on the history's clock, so a violation can be shown with
//! the faults around it and a run can say which faults struck while a lock
//! was held.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::kind::FaultKind;
use crate::micros;

/// One injected fault.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use redquorum_harness::{FaultEvent, FaultKind};
/// let e = FaultEvent::new(FaultKind::Stall, vec![1], Duration::ZERO, Duration::from_millis(300));
/// assert!(e.to_string().starts_with("stall on nodes [1]"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FaultEvent {
    /// The kind.
    pub kind: FaultKind,
    /// The nodes it hit (for a client fault: the nodes cut off from the group).
    pub nodes: Vec<usize>,
    /// The client group it hit, for client faults (partition, client pause).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<usize>,
    /// When it was injected.
    #[serde(with = "micros")]
    pub start: Duration,
    /// When it was healed (equal to `start` for an instant fault such as a clock jump).
    #[serde(with = "micros")]
    pub end: Duration,
    /// What exactly it did, when its kind does not say (a cluster fault:
    /// which slot, which shard, in how many steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a fault that holds answers back on their way to the client (a
    /// `script-flush`: its proxy loads the scripts back before it forwards
    /// a NOSCRIPT answer), the longest it held one, as measured: every
    /// answer it held was on its way by `end` plus this.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::micros::option"
    )]
    pub held_answers: Option<Duration>,
}

impl FaultEvent {
    /// A fault on `nodes` from `start` to `end`.
    ///
    /// # Examples
    ///
    /// See [`FaultEvent`].
    #[must_use]
    pub fn new(kind: FaultKind, nodes: Vec<usize>, start: Duration, end: Duration) -> Self {
        Self {
            kind,
            nodes,
            group: None,
            start,
            end,
            detail: None,
            held_answers: None,
        }
    }

    /// The same fault, on a client group.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redquorum_harness::{FaultEvent, FaultKind};
    /// let e = FaultEvent::new(FaultKind::ClientPause, vec![], Duration::ZERO, Duration::ZERO).on_group(2);
    /// assert_eq!(e.group, Some(2));
    /// ```
    #[must_use]
    pub fn on_group(mut self, group: usize) -> Self {
        self.group = Some(group);
        self
    }

    /// The same fault, saying what exactly it did.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redquorum_harness::{FaultEvent, FaultKind};
    /// let e = FaultEvent::new(FaultKind::Migrate, vec![0], Duration::ZERO, Duration::ZERO)
    ///     .with_detail("slot 7 to shard 1");
    /// assert!(e.to_string().contains("(slot 7 to shard 1)"));
    /// ```
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// True when the fault was in force at some time in `[from, until]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redquorum_harness::{FaultEvent, FaultKind};
    /// let ms = Duration::from_millis;
    /// let e = FaultEvent::new(FaultKind::Kill, vec![0], ms(100), ms(200));
    /// assert!(e.overlaps(ms(150), ms(400)));
    /// assert!(!e.overlaps(ms(201), ms(400)));
    /// ```
    #[must_use]
    pub fn overlaps(&self, from: Duration, until: Duration) -> bool {
        self.start <= until && self.end >= from
    }
}

impl fmt::Display for FaultEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on nodes {:?}", self.kind.name(), self.nodes)?;
        if let Some(group) = self.group {
            write!(f, " for client group {group}")?;
        }
        if let Some(detail) = &self.detail {
            write!(f, " ({detail})")?;
        }
        write!(
            f,
            " from {:.1} to {:.1} ms",
            self.start.as_secs_f64() * 1e3,
            self.end.as_secs_f64() * 1e3
        )?;
        if let Some(held) = self.held_answers {
            write!(
                f,
                ", answers held back {:.1} ms at most",
                held.as_secs_f64() * 1e3
            )?;
        }
        Ok(())
    }
}

/// What the nemesis did.
///
/// # Examples
///
/// ```
/// let log = redquorum_harness::FaultLog::default();
/// assert_eq!(log.total(), 0);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultLog {
    /// Faults injected, by kind.
    pub injected: BTreeMap<FaultKind, u64>,
    /// Faults that could not be injected or healed, with why.
    pub errors: Vec<String>,
    /// What the nemesis counted or held back, for the report (not errors):
    /// the NOSCRIPT answers the script flushes caused, fence losses held back.
    pub notes: Vec<String>,
    /// Every injected fault, in order.
    pub events: Vec<FaultEvent>,
}

impl FaultLog {
    /// Faults injected in all.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(redquorum_harness::FaultLog::default().total(), 0);
    /// ```
    #[must_use]
    pub fn total(&self) -> u64 {
        self.injected.values().sum()
    }

    /// Records an injected fault.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use redquorum_harness::{FaultEvent, FaultKind, FaultLog};
    /// let mut log = FaultLog::default();
    /// log.record(FaultEvent::new(FaultKind::Reset, vec![0], Duration::ZERO, Duration::ZERO));
    /// assert_eq!(log.injected[&FaultKind::Reset], 1);
    /// ```
    pub fn record(&mut self, event: FaultEvent) {
        *self.injected.entry(event.kind).or_default() += 1;
        self.events.push(event);
    }

    /// The faults in force at some time in `[from, until]`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(redquorum_harness::FaultLog::default().around(std::time::Duration::ZERO, std::time::Duration::MAX).is_empty());
    /// ```
    #[must_use]
    pub fn around(&self, from: Duration, until: Duration) -> Vec<&FaultEvent> {
        self.events
            .iter()
            .filter(|e| e.overlaps(from, until))
            .collect()
    }
}
