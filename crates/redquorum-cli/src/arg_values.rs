//! Command-line values checked where they are parsed: durations in a range
//! that every later computation can hold, names that must not be empty, and
//! counts of at least one.
//!
//! A bad value is a clap error, so it exits 64 with clap's message naming the
//! option, before any node is contacted.

use std::time::Duration;

use redquorum_harness::Holder;

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

/// A count of one or more (`--limit`).
pub(crate) fn count(text: &str) -> Result<usize, String> {
    let value: usize = text
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number"))?;
    if value == 0 {
        return Err("must be at least 1".to_owned());
    }
    Ok(value)
}

/// A semaphore's permit count (`exec -n K`): one or more, since a semaphore
/// with no permits would admit no one.
pub(crate) fn permits(text: &str) -> Result<usize, String> {
    count(text).map_err(|e| format!("{e} (a semaphore with no permits admits no one)"))
}

/// `brief=5,to-deadline=2` → weights per holder kind.
pub(crate) fn parse_holders(list: &str) -> Result<Vec<(Holder, u32)>, String> {
    let holders: Vec<(Holder, u32)> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (name, weight) = item.split_once('=').unwrap_or((item, "1"));
            let weight = weight
                .parse()
                .map_err(|_| format!("--holders: bad weight in {item:?}"))?;
            Ok((name.parse().map_err(|e| format!("--holders: {e}"))?, weight))
        })
        .collect::<Result<_, String>>()?;
    if holders.iter().all(|(_, w)| *w == 0) {
        return Err("--holders: no holder kind has a weight".into());
    }
    Ok(holders)
}

/// Most shards per master that `--cluster` takes (`nodes up`, `demo`,
/// `torture`).
pub(crate) const MAX_SHARDS: u16 = 16;

/// Shards per master for `--cluster S`: 1 to [`MAX_SHARDS`].
pub(crate) fn shards(text: &str) -> Result<u16, String> {
    match text.parse::<u16>() {
        Ok(shards) if (1..=MAX_SHARDS).contains(&shards) => Ok(shards),
        _ => Err(format!(
            "use 1 to {MAX_SHARDS} shards per master (each master is one Redis Cluster)"
        )),
    }
}

/// A signal `exec`'s guard forwards to its command, by name, with or
/// without `SIG`: `TERM`, `SIGINT`, `hup` (USR1 and USR2 are the guard's own).
pub(crate) fn forwarded_signal(text: &str) -> Result<nix::sys::signal::Signal, String> {
    use nix::sys::signal::Signal;
    let upper = text.to_ascii_uppercase();
    match upper.strip_prefix("SIG").unwrap_or(&upper) {
        "TERM" => Ok(Signal::SIGTERM),
        "INT" => Ok(Signal::SIGINT),
        "HUP" => Ok(Signal::SIGHUP),
        _ => Err(format!("{text:?} is not one of TERM, INT, HUP")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_1_to_16() {
        assert_eq!(shards("1"), Ok(1));
        assert_eq!(shards("16"), Ok(16));
        for bad in ["0", "17", "-1", "x"] {
            assert!(shards(bad).is_err(), "{bad}");
        }
    }

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

    #[test]
    fn counts_and_permits_are_whole_numbers_from_one() {
        assert_eq!(count("1"), Ok(1));
        assert_eq!(permits("3"), Ok(3));
        assert!(count("0").unwrap_err().contains("at least 1"));
        assert!(permits("0").unwrap_err().contains("admits no one"));
        assert!(count("-1").unwrap_err().contains("not a whole number"));
        assert!(count("two").is_err());
    }
}
