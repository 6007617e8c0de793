//! What `exec` says, read back by the exec holders (`exec_holder.rs`):
//! how much validity was left when it left a lock to its TTL (its
//! command's guard was killed: nothing proves the command's tree is gone),
//! and the owner of a hold it took but ran no command under.

use std::time::Duration;

/// Where the time left starts in `exec`'s message (`exec.rs`, `run`).
const LEFT_TO_EXPIRE: &str = "it is left to expire with its TTL (";

/// The validity left when `exec` left the lock to expire, rounded down
/// (the message rounds it to a tenth of its unit); `None` when `stderr`
/// does not say so (the lock was released, or the command never ran).
pub(crate) fn left_to_expire(stderr: &str) -> Option<Duration> {
    let from = stderr.find(LEFT_TO_EXPIRE)? + LEFT_TO_EXPIRE.len();
    let text = stderr[from..].split(" left)").next()?;
    let unit_at = text.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = text.split_at(unit_at);
    let unit_ns = match unit {
        "s" => 1e9,
        "ms" => 1e6,
        "µs" => 1e3,
        "ns" => 1.0,
        _ => return None,
    };
    let value: f64 = number.parse().ok()?;
    // `{:.1?}` rounds to the nearest tenth: the real value may be 0.05 below.
    let ns = ((value - 0.05) * unit_ns).max(0.0);
    Some(Duration::from_nanos(ns as u64))
}

/// The owner of a hold `exec` took but ran no command under (its lease at
/// risk at once, or no fencing token), as its message names it.
pub(crate) fn unused_hold_owner(stderr: &str) -> Option<&str> {
    let from = stderr.find("(owner ")? + "(owner ".len();
    let owner = stderr[from..].split(')').next()?;
    (!owner.is_empty() && owner.bytes().all(|b| b.is_ascii_hexdigit())).then_some(owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(left: Duration) -> String {
        format!(
            "redquorum exec: the command's guard was killed by SIGKILL; 1 processes left below it were killed. \
             The lease on \"r0\" is not released: {LEFT_TO_EXPIRE}{left:.1?} left)\n"
        )
    }

    #[test]
    fn the_time_left_reads_back_no_later_than_it_was() {
        for ms in [0, 1, 49, 950, 1234, 1999, 2000, 30_000] {
            let left = Duration::from_millis(ms) + Duration::from_micros(ms * 7 % 1000);
            let text = message(left);
            let read = left_to_expire(&text).unwrap_or_else(|| panic!("{text}"));
            assert!(read <= left, "{read:?} > {left:?}");
            assert!(
                left - read <= left / 10 + Duration::from_millis(1),
                "{read:?} for {left:?}"
            );
        }
    }

    #[test]
    fn the_owner_of_a_hold_no_command_ran_under_is_read_back() {
        let at_risk = "redquorum exec: lease on \"r3\" (owner 2783a0f1) at risk as soon as acquired (1ms left); not running the command\n";
        assert_eq!(unused_hold_owner(at_risk), Some("2783a0f1"));
        let no_token = "redquorum exec: no fencing token for \"r3\" (owner 9b) : lost";
        assert_eq!(unused_hold_owner(no_token), Some("9b"));
        assert_eq!(
            unused_hold_owner("redquorum exec: lock on \"r3\" is held (owner unknown)"),
            None
        );
        assert_eq!(unused_hold_owner(""), None);
    }

    #[test]
    fn without_the_message_nothing_was_left_to_expire() {
        assert_eq!(left_to_expire(""), None);
        assert_eq!(
            left_to_expire(
                "redquorum exec: release of \"r0\" failed (x); the keys expire with their ttl"
            ),
            None
        );
    }
}
