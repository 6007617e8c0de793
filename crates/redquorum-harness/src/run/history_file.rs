//! `HistoryFile`: a whole run as JSON lines — what was run, every session,
//! every fault, what the key audit saw, the protected values and the leaks —
//! so a failure found in CI can be kept, re-checked and studied later.
//!
//! One JSON object per line, each with one field naming what it is:
//! `{"run": ..}` first, then `{"session": ..}`, `{"fault": ..}`, `{"key": ..}`,
//! `{"operator": ..}`, `{"round": ..}`, `{"track": ..}` (the audit's rounds
//! and every hold's expiry in them), `{"leaked": ..}` and `{"protected": ..}` lines. Times are microseconds
//! on the run's one monotonic clock.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::Evidence;
use crate::evidence::Session;
use crate::evidence::{AuditRound, Backing, CounterTrack, HoldTrack, KeyLife};
use crate::evidence::{HostClockStep, LeakedKey, OperatorCall, RuntimeLag};
use crate::faults::FaultEvent;

/// What was run: enough to read the history and re-check it.
///
/// # Examples
///
/// ```
/// let info = redquorum_harness::RunInfo::default();
/// assert_eq!(info.slack_ms, 1000);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct RunInfo {
    /// The command line, for running it again.
    pub command: String,
    /// Lock TTL, ms.
    pub ttl_ms: u64,
    /// How long an ended owner's key may linger before the audit calls it an orphan, ms.
    pub slack_ms: u64,
    /// Nodes.
    pub nodes: usize,
    /// With cluster masters: the shards of each (`nodes` is then the masters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<usize>,
    /// Clients and client groups.
    pub clients: usize,
    /// Client groups (each with its own proxies and runtime).
    pub groups: usize,
    /// How long clients kept locking, ms.
    pub duration_ms: u64,
    /// The fault kinds asked for.
    pub nemesis: Vec<String>,
    /// Whether the store checked fencing tokens.
    pub fenced_store: bool,
    /// The planted bug, for a mutant run.
    pub mutant: Option<String>,
    /// The lock-delay the run's lock had, and what its check allows for.
    pub lock_delay: Option<crate::check::LockDelayRule>,
    /// How often an operator inspected a resource, ms (`None`: never).
    pub inspect_every_ms: Option<u64>,
    /// How often an operator force-released a resource, ms (`None`: never).
    pub force_release_every_ms: Option<u64>,
    /// The operator's calls were the default run's, not asked for
    /// ([`OperatorPace::by_default`](crate::OperatorPace::by_default)).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub operator_by_default: bool,
    /// Holds were handed over as lease tickets to adopters
    /// ([`WorkloadConfig::hand_over_chance`](crate::WorkloadConfig::hand_over_chance)
    /// above 0): then some must have been.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hand_overs: bool,
    /// The lock kind the clients took (the library's name for it; empty:
    /// not recorded, as in histories from before the field).
    pub lock_kind: String,
    /// Each client group's lock configuration, by group (empty: every
    /// group alike, or a history from before the field).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configurations: Vec<String>,
    /// Each client group's lock TTL in ms, by group, when they differ from
    /// `ttl_ms` (empty: every group's is `ttl_ms`); the key audit dated
    /// each key by its owner's group's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub group_ttls_ms: Vec<u64>,
    /// The seed.
    pub seed: u64,
    /// Nodes whose clocks ran outside the drift allowance (`--fast-node`,
    /// `--fast-clocks` above it): the premise rule does not judge them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clock_off: Vec<usize>,
}

impl Default for RunInfo {
    fn default() -> Self {
        Self {
            command: String::new(),
            ttl_ms: 0,
            slack_ms: 1000,
            nodes: 0,
            shards: None,
            clients: 0,
            groups: 1,
            duration_ms: 0,
            nemesis: Vec::new(),
            fenced_store: false,
            mutant: None,
            lock_kind: String::new(),
            configurations: Vec::new(),
            group_ttls_ms: Vec::new(),
            lock_delay: None,
            inspect_every_ms: None,
            force_release_every_ms: None,
            operator_by_default: false,
            hand_overs: false,
            seed: 0,
            clock_off: Vec::new(),
        }
    }
}

/// A saved run.
///
/// # Examples
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use std::time::Duration;
/// use redquorum_harness::{HistoryFile, RuntimeLag, Session};
/// let mut run = HistoryFile::default();
/// run.sessions.push(Session::refused(0, "r", Duration::from_micros(7), "contended"));
/// let (at, late) = (Duration::from_secs(2), Duration::from_millis(90));
/// run.lags.push(RuntimeLag { group: 1, node: Some(3), at, late });
/// let mut bytes = Vec::new();
/// run.write_to(&mut bytes)?;
/// let back = HistoryFile::read_from(&bytes[..])?;
/// assert_eq!(back.sessions, run.sessions);
/// assert_eq!(back.lags, run.lags);
/// assert!(back.check().is_ok());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryFile {
    /// What was run.
    pub info: RunInfo,
    /// Every session.
    pub sessions: Vec<Session>,
    /// Every fault injected.
    pub faults: Vec<FaultEvent>,
    /// What the key audit saw.
    pub keys: Vec<KeyLife>,
    /// An operator's inspections and force-releases.
    pub operator: Vec<OperatorCall>,
    /// The audit's rounds and every hold's expiry in them.
    pub backing: Backing,
    /// Lock keys left after the run.
    pub leaked: Vec<LeakedKey>,
    /// Each resource's protected value after the run.
    pub protected: BTreeMap<String, i64>,
    /// The client groups' runtimes' late wake-ups (empty in histories
    /// from before them).
    pub lags: Vec<RuntimeLag>,
    /// Steps of the machine's wall clock during the run (empty in
    /// histories from before the watch): a run with violations and a step
    /// is void (`TortureRun::void`).
    pub host_steps: Vec<HostClockStep>,
}

/// One line of the file.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Line {
    Run(RunInfo),
    Session(Session),
    Fault(FaultEvent),
    Key(KeyLife),
    Operator(OperatorCall),
    Round(AuditRound),
    Track(HoldTrack),
    Counter(CounterTrack),
    Leaked(LeakedKey),
    Protected(BTreeMap<String, i64>),
    Lag(RuntimeLag),
    HostStep(HostClockStep),
}

impl HistoryFile {
    /// The evidence for [`check_evidence`](crate::check_evidence).
    ///
    /// # Examples
    ///
    /// See [`HistoryFile`].
    #[must_use]
    pub fn evidence(&self) -> Evidence<'_> {
        Evidence {
            leaked: &self.leaked,
            keys: &self.keys,
            faults: &self.faults,
            slack: Duration::from_millis(self.info.slack_ms),
            // Histories without the TTL: the torture's slack is half of it.
            ttl: match self.info.ttl_ms {
                0 => Duration::from_millis(self.info.slack_ms * 2),
                ttl => Duration::from_millis(ttl),
            },
            lock_delay: self.info.lock_delay,
            operator: &self.operator,
            nodes: self.info.nodes,
            backing: &self.backing,
            clock_off: &self.info.clock_off,
            lags: &self.lags,
            ..Evidence::new(&self.sessions, &self.protected)
        }
    }

    /// Checks the saved run again.
    ///
    /// # Examples
    ///
    /// See [`HistoryFile`].
    #[must_use]
    pub fn check(&self) -> crate::check::Verdict {
        crate::check::check_evidence(&self.evidence())
    }

    /// Writes the run as JSON lines.
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// See [`HistoryFile`].
    pub fn write_to(&self, out: impl Write) -> io::Result<()> {
        let mut out = io::BufWriter::new(out);
        let mut line = |line: &Line| -> io::Result<()> {
            serde_json::to_writer(&mut out, line)?;
            out.write_all(b"\n")
        };
        line(&Line::Run(self.info.clone()))?;
        for s in &self.sessions {
            line(&Line::Session(s.clone()))?;
        }
        for f in &self.faults {
            line(&Line::Fault(f.clone()))?;
        }
        for k in &self.keys {
            line(&Line::Key(k.clone()))?;
        }
        for o in &self.operator {
            line(&Line::Operator(o.clone()))?;
        }
        for r in &self.backing.rounds {
            line(&Line::Round(r.clone()))?;
        }
        for t in &self.backing.holds {
            line(&Line::Track(t.clone()))?;
        }
        for c in &self.backing.counters {
            line(&Line::Counter(c.clone()))?;
        }
        for l in &self.leaked {
            line(&Line::Leaked(l.clone()))?;
        }
        for lag in &self.lags {
            line(&Line::Lag(*lag))?;
        }
        for step in &self.host_steps {
            line(&Line::HostStep(*step))?;
        }
        line(&Line::Protected(self.protected.clone()))?;
        out.flush()
    }

    /// Writes the run to `path`.
    ///
    /// # Errors
    ///
    /// I/O errors.
    ///
    /// # Examples
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("run.jsonl");
    /// redquorum_harness::HistoryFile::default().save(&path).unwrap();
    /// assert!(redquorum_harness::HistoryFile::load(&path).is_ok());
    /// ```
    pub fn save(&self, path: &Path) -> io::Result<()> {
        self.write_to(std::fs::File::create(path)?)
    }

    /// Reads a run written by [`write_to`](Self::write_to).
    ///
    /// # Errors
    ///
    /// I/O errors, or a line that is not one of the file's objects (with its number).
    ///
    /// # Examples
    ///
    /// See [`HistoryFile`].
    pub fn read_from(input: impl io::Read) -> io::Result<Self> {
        let mut run = Self::default();
        for (number, line) in io::BufReader::new(input).lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let parsed: Line = serde_json::from_str(&line).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("line {}: {e}", number + 1),
                )
            })?;
            match parsed {
                Line::Run(info) => run.info = info,
                Line::Session(s) => run.sessions.push(s),
                Line::Fault(f) => run.faults.push(f),
                Line::Key(k) => run.keys.push(k),
                Line::Operator(o) => run.operator.push(o),
                Line::Round(r) => run.backing.rounds.push(r),
                Line::Track(t) => run.backing.holds.push(t),
                Line::Counter(c) => run.backing.counters.push(c),
                Line::Leaked(l) => run.leaked.push(l),
                Line::Protected(p) => run.protected.extend(p),
                Line::Lag(lag) => run.lags.push(lag),
                Line::HostStep(step) => run.host_steps.push(step),
            }
        }
        Ok(run)
    }

    /// Reads a run from `path`.
    ///
    /// # Errors
    ///
    /// See [`read_from`](Self::read_from).
    ///
    /// # Examples
    ///
    /// See [`save`](Self::save).
    pub fn load(path: &Path) -> io::Result<Self> {
        Self::read_from(std::fs::File::open(path)?)
    }
}
