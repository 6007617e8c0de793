//! Client CPU time, from `getrusage(2)`: on a 2-core machine shared with
//! the nodes it is a steadier figure than wall-clock throughput.

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};

/// User + system CPU time used so far by this process (all threads, living
/// or exited); `None` if `getrusage` fails.
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
    let usage = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let time = |t: nix::sys::time::TimeVal| {
        let secs = u64::try_from(t.tv_sec()).ok()?;
        let micros = u64::try_from(t.tv_usec()).ok()?;
        Some(Duration::from_secs(secs) + Duration::from_micros(micros))
    };
    Some(time(usage.user_time())? + time(usage.system_time())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        let before = process_cpu().expect("getrusage works here");
        let give_up = std::time::Instant::now() + Duration::from_secs(30);
        let mut x = 0u64;
        // Busy work until the CPU time moves (bounded: a stuck counter fails).
        while std::time::Instant::now() < give_up {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            if process_cpu().expect("getrusage works here") > before {
                return;
            }
        }
        panic!("no CPU time counted in 30 s of busy work");
    }
}
