//! The lag meter: a task that sleeps [`LAG_TICK`] at a time on a runtime
//! and reports every wake-up [`LAG_RECORDED`] or more late (the thread was
//! kept from the CPU, and everything else on it waited as long). The
//! client groups' runtimes (`run/workload.rs`) and the fault proxies
//! (`faults/net/proxy.rs`) run one; a history keeps what they report as
//! [`RuntimeLag`](crate::RuntimeLag)s.

use std::time::{Duration, Instant};

/// How long the lag meter sleeps at a time.
pub const LAG_TICK: Duration = Duration::from_millis(20);

/// The least lateness recorded.
pub const LAG_RECORDED: Duration = Duration::from_millis(50);

/// Sleeps [`LAG_TICK`] at a time on the current runtime, until `until`
/// (forever with `None`: until the runtime is dropped), and calls `late`
/// with the wake-up time and the lateness of every wake-up at least
/// [`LAG_RECORDED`] late.
pub(crate) async fn meter(until: Option<Instant>, mut late: impl FnMut(Instant, Duration)) {
    while until.is_none_or(|until| Instant::now() < until) {
        let asked = Instant::now();
        tokio::time::sleep(LAG_TICK).await;
        let lateness = asked.elapsed().saturating_sub(LAG_TICK);
        if lateness >= LAG_RECORDED {
            late(Instant::now(), lateness);
        }
    }
}
