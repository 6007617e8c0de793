//! How a session reads in a report: one line, times in ms on the
//! history's clock.

use std::time::Duration;

use super::Session;

impl std::fmt::Display for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |t: Option<Duration>| {
            t.map_or_else(
                || "-".to_owned(),
                |t| format!("{:.1}", t.as_secs_f64() * 1e3),
            )
        };
        write!(
            f,
            "client {} {} {:?} owner {} fence {} start {} grant {} valid-until {} write {}..{} release {} ({:?})",
            self.client,
            // The kind says which holds may share (an overlap of a reader
            // and a writer is one; older histories have none).
            if self.kind.is_empty() {
                "-"
            } else {
                &self.kind
            },
            self.resource,
            if self.owner.is_empty() {
                "-"
            } else {
                &self.owner
            },
            self.fence.map_or_else(|| "-".to_owned(), |t| t.to_string()),
            ms(Some(self.start)),
            ms(self.grant),
            ms(self.validity_end),
            ms(self.write_start),
            ms(self.write_end),
            ms(self.release),
            self.outcome
        )?;
        // Which nodes granted it: an overlap's common voter is where to look.
        if !self.voters.is_empty() {
            write!(f, " voters {:?}", self.voters)?;
        }
        f.write_str(" (times in ms)")
    }
}
