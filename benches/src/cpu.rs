//! Client CPU time, from `/proc/self/stat`: on a 2-core machine shared with
//! the nodes it is a steadier figure than wall-clock throughput.

use std::time::Duration;

/// Linux reports `utime`/`stime` in USER_HZ ticks, fixed at 100 on x86-64 and arm64.
const TICKS_PER_SEC: u64 = 100;

/// User + system CPU time used so far by this process (all threads, living
/// or exited); `None` where `/proc` is not available.
///
/// The resolution is one tick (10 ms), so measure over at least a second.
///
/// # Examples
///
/// ```
/// if let Some(cpu) = redquorum_benches::process_cpu() {
///     println!("used {cpu:?} of CPU so far");
/// }
/// ```
#[must_use]
pub fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat(&stat)
}

/// Fields 14 and 15 (utime, stime), counted after the `(comm)` field, which may contain spaces.
fn parse_stat(stat: &str) -> Option<Duration> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_comm.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis(
        (utime + stime) * 1000 / TICKS_PER_SEC,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_utime_and_stime_after_a_comm_with_spaces() {
        let stat = "42 (my bench) S 1 42 42 0 -1 4194304 100 0 0 0 150 25 0 0 20 0 4 0 1 2 3";
        assert_eq!(parse_stat(stat), Some(Duration::from_millis(1750)));
    }

    #[test]
    fn garbage_is_none() {
        assert_eq!(parse_stat("nonsense"), None);
    }
}
