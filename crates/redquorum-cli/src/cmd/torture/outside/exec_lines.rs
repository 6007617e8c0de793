//! What the command under `exec` tells the torture (`exec_hold.rs` writes,
//! `exec_holder.rs` reads): one line per step of its critical section, each
//! stamped with the machine's monotonic clock when it happened, so the
//! session is recorded with the command's own times, not when the torture
//! happened to read them.

use std::time::{Duration, Instant};

/// One step of the command's critical section; `at` is `CLOCK_MONOTONIC` in
/// nanoseconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// The command started, under the hold `owner` with token `fence`.
    Started {
        at: u64,
        owner: String,
        fence: Option<u64>,
    },
    /// The command SIGKILLed its guard (the dead-man case).
    GuardKilled { at: u64 },
    /// The fenced read returned `value` (`None`: a higher token was seen).
    Read { at: u64, value: Option<i64> },
    /// Still holding, between the read and the write (a heartbeat: the
    /// command does nothing with the resource between two of them).
    Holding { at: u64 },
    /// The fenced write of `value` is about to be sent.
    WriteStart { at: u64, value: i64 },
    /// The fenced write returned: accepted or refused by the token.
    Wrote { at: u64, accepted: bool },
    /// The store failed (its effect unknown).
    Failed { at: u64 },
}

impl Line {
    /// The line as written, without its newline.
    pub(crate) fn format(&self) -> String {
        match self {
            Line::Started { at, owner, fence } => {
                let fence = fence.map_or_else(|| "-".to_owned(), |f| f.to_string());
                format!("started {at} {owner} {fence}")
            }
            Line::GuardKilled { at } => format!("guard-killed {at}"),
            Line::Read { at, value } => {
                format!(
                    "read {at} {}",
                    value.map_or_else(|| "-".into(), |v| v.to_string())
                )
            }
            Line::Holding { at } => format!("holding {at}"),
            Line::WriteStart { at, value } => format!("write-start {at} {value}"),
            Line::Wrote { at, accepted } => format!("wrote {at} {}", u8::from(*accepted)),
            Line::Failed { at } => format!("failed {at}"),
        }
    }

    /// A line as [`Line::format`] wrote it; `None` for anything else.
    pub(crate) fn parse(line: &str) -> Option<Self> {
        let words: Vec<&str> = line.split(' ').collect();
        let at = words.get(1)?.parse().ok()?;
        let optional = |word: &str| match word {
            "-" => Some(None),
            n => n.parse().ok().map(Some),
        };
        Some(match (words[0], &words[2..]) {
            ("started", [owner, fence]) => Line::Started {
                at,
                owner: (*owner).to_owned(),
                fence: optional(fence)?,
            },
            ("guard-killed", []) => Line::GuardKilled { at },
            ("read", [value]) => Line::Read {
                at,
                value: match *value {
                    "-" => None,
                    v => Some(v.parse().ok()?),
                },
            },
            ("holding", []) => Line::Holding { at },
            ("write-start", [value]) => Line::WriteStart {
                at,
                value: value.parse().ok()?,
            },
            ("wrote", [accepted]) => Line::Wrote {
                at,
                accepted: match *accepted {
                    "1" => true,
                    "0" => false,
                    _ => return None,
                },
            },
            ("failed", []) => Line::Failed { at },
            _ => return None,
        })
    }
}

/// `CLOCK_MONOTONIC` now, in nanoseconds (the clock `Instant` reads on Linux).
pub(crate) fn monotonic_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_or(0, |t| {
        u64::try_from(Duration::from(t).as_nanos()).unwrap_or(u64::MAX)
    })
}

/// The `Instant` of a `CLOCK_MONOTONIC` reading taken in another process
/// (the clock is the machine's); a reading from the future is now.
pub(crate) fn instant_of(at_ns: u64) -> Instant {
    let (now, now_ns) = (Instant::now(), monotonic_ns());
    now.checked_sub(Duration::from_nanos(now_ns.saturating_sub(at_ns)))
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn line() -> impl Strategy<Value = Line> {
        let at = any::<u64>();
        prop_oneof![
            (at, "[0-9a-f]{1,32}", proptest::option::of(any::<u64>()))
                .prop_map(|(at, owner, fence)| Line::Started { at, owner, fence }),
            at.prop_map(|at| Line::GuardKilled { at }),
            at.prop_map(|at| Line::Holding { at }),
            (at, proptest::option::of(any::<i64>()))
                .prop_map(|(at, value)| Line::Read { at, value }),
            (at, any::<i64>()).prop_map(|(at, value)| Line::WriteStart { at, value }),
            (at, any::<bool>()).prop_map(|(at, accepted)| Line::Wrote { at, accepted }),
            at.prop_map(|at| Line::Failed { at }),
        ]
    }

    proptest! {
        #[test]
        fn every_line_reads_back_as_written(line in line()) {
            prop_assert_eq!(Line::parse(&line.format()), Some(line));
        }
    }

    #[test]
    fn anything_else_is_no_line() {
        for text in [
            "",
            "started",
            "started 1 owner",
            "wrote 1 2",
            "read x 1",
            "exit 0",
        ] {
            assert_eq!(Line::parse(text), None, "{text:?}");
        }
    }

    #[test]
    fn a_reading_of_the_clock_maps_back_to_about_the_same_instant() {
        let (before, at) = (Instant::now(), monotonic_ns());
        let mapped = instant_of(at);
        let after = Instant::now();
        // Both clocks are CLOCK_MONOTONIC: within the few µs between the reads.
        assert!(mapped + Duration::from_millis(5) >= before && mapped <= after);
    }
}
