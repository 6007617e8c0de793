//! The report's row per lock configuration (`RunInfo::configurations`):
//! each configuration's client groups, their sessions, grants and the
//! violations their sessions are part of, so a bug that only one way of
//! building the lock reaches shows where it lives.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;

use redquorum_harness::{HistoryFile, Verdict};

/// One configuration's figures.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(crate) struct ConfigurationRow {
    /// Its label (`population.rs`).
    pub(crate) label: String,
    /// The client groups that used it.
    pub(crate) groups: Vec<usize>,
    pub(crate) sessions: usize,
    pub(crate) granted: usize,
    /// Violations with a session of these groups among theirs (a
    /// violation between two configurations counts for both).
    pub(crate) violations: usize,
}

/// A row per configuration of `file`, in group order; none when every
/// group used the same.
pub(crate) fn rows(file: &HistoryFile, verdict: &Verdict) -> Vec<ConfigurationRow> {
    let labels = &file.info.configurations;
    let mut rows: Vec<ConfigurationRow> = Vec::new();
    for (group, label) in labels.iter().enumerate() {
        match rows.iter_mut().find(|r| &r.label == label) {
            Some(row) => row.groups.push(group),
            None => rows.push(ConfigurationRow {
                label: label.clone(),
                groups: vec![group],
                sessions: 0,
                granted: 0,
                violations: 0,
            }),
        }
    }
    for row in &mut rows {
        let mine = |group: usize| row.groups.contains(&group);
        let sessions = file.sessions.iter().filter(|s| mine(s.group));
        let (all, granted) = sessions.fold((0, 0), |(n, g), s| {
            (n + 1, g + usize::from(s.grant.is_some()))
        });
        row.sessions = all;
        row.granted = granted;
        row.violations = verdict
            .violations
            .iter()
            .filter(|v| {
                let groups: BTreeSet<usize> = v.sessions().iter().map(|s| s.group).collect();
                groups.into_iter().any(mine)
            })
            .count();
    }
    rows
}

/// The rows as report lines (empty when there are none).
pub(crate) fn text(rows: &[ConfigurationRow]) -> String {
    let mut out = String::new();
    if rows.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "configurations (client groups: sessions, granted, violations)"
    );
    for row in rows {
        let groups: Vec<String> = row.groups.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "  [{}] {}: {} sessions, {} granted, {} violations",
            groups.join(","),
            row.label,
            row.sessions,
            row.granted,
            row.violations
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use redquorum_harness::{RunInfo, Session, Violation};

    use super::*;

    fn session(group: usize, granted: bool) -> Session {
        let ms = Duration::from_millis;
        let mut s = if granted {
            Session::granted(0, "r", "o", ms(0), ms(1), ms(100))
        } else {
            Session::refused(0, "r", ms(0), "contended")
        };
        s.group = group;
        s
    }

    #[test]
    fn groups_of_one_label_share_a_row_and_violations_count_for_each_side() {
        let mut info = RunInfo::default();
        info.configurations = vec!["a".into(), "b".into(), "a".into()];
        let sessions = vec![session(0, true), session(1, false), session(2, true)];
        let overlap = Violation::Overlap {
            first: Box::new(sessions[1].clone()),
            second: Box::new(sessions[2].clone()),
        };
        let file = HistoryFile {
            info,
            sessions,
            ..HistoryFile::default()
        };
        let verdict = Verdict {
            violations: vec![overlap],
        };
        let rows = rows(&file, &verdict);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].groups.clone(),
                rows[0].sessions,
                rows[0].granted,
                rows[0].violations
            ),
            (vec![0, 2], 2, 2, 1)
        );
        assert_eq!(
            (
                rows[1].groups.clone(),
                rows[1].sessions,
                rows[1].granted,
                rows[1].violations
            ),
            (vec![1], 1, 0, 1)
        );
        assert!(text(&rows).contains("[0,2] a: 2 sessions, 2 granted, 1 violations"));
        assert!(rows_of_alike_groups_are_none());
    }

    fn rows_of_alike_groups_are_none() -> bool {
        rows(&HistoryFile::default(), &Verdict::default()).is_empty()
    }
}
