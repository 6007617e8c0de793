//! Command-line values checked where they are parsed: durations in a range
//! that every later computation can hold, and names that must not be empty.
//!
//! A bad value is a clap error, so it exits 64 with clap's message naming the
//! option, before any node is contacted.

use std::time::Duration;

/// The longest duration any option takes: 100 years (365-day years).
///
/// Far below what overflows `Instant` arithmetic (`now + 300000000000y`
/// panics), Tokio's timers, or Redis's expire time (a signed 64-bit count of
/// milliseconds since 1970), and longer than any lease or wait that makes sense.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// A duration such as `500ms`, `10s`, `2m`, `1h 30m`, at most [`MAX_DURATION`].
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    let value = humantime::parse_duration(text).map_err(|e| e.to_string())?;
    if value > MAX_DURATION {
        return Err(format!(
            "out of range: at most {} (100 years)",
            humantime::format_duration(MAX_DURATION)
        ));
    }
    Ok(value)
}

/// A [`duration`] above zero.
pub(crate) fn positive_duration(text: &str) -> Result<Duration, String> {
    let value = duration(text)?;
    if value.is_zero() {
        return Err("must be greater than zero".to_owned());
    }
    Ok(value)
}

/// A name that is not empty (a resource: an empty one names no lock).
pub(crate) fn non_empty(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("must not be empty".to_owned());
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_in_range_and_refuse_what_would_overflow() {
        assert_eq!(duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(duration("0s"), Ok(Duration::ZERO));
        assert_eq!(duration("36500days"), Ok(MAX_DURATION));
        assert!(duration("36501days").unwrap_err().contains("out of range"));
        assert!(
            duration("300000000000y")
                .unwrap_err()
                .contains("out of range")
        );
        // Too big for humantime itself: its own error.
        assert!(duration("300000000000000000000y").is_err());
        assert!(duration("soon").is_err());
    }

    #[test]
    fn positive_durations_refuse_zero_and_names_refuse_empty() {
        assert_eq!(positive_duration("1ms"), Ok(Duration::from_millis(1)));
        assert!(
            positive_duration("0s")
                .unwrap_err()
                .contains("greater than zero")
        );
        assert_eq!(non_empty("r"), Ok("r".to_owned()));
        assert!(non_empty("").is_err());
    }
}
