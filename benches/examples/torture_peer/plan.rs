//! The plan both locks run: `redquorum torture`'s default run (5 local
//! AOF-everysec nodes, the last three with clocks 0.9 % fast, 32 clients in
//! 4 groups on 4 resources, a 2 s TTL, the default holder mix, faults on 1
//! or 2 nodes, 0–300 ms apart, up to `ttl / 2` long) with one fault kind,
//! the plain lock, and no futures dropped part-way (rslock's are not meant
//! to be dropped; the comparison is about faults).

use std::time::Duration;

use redquorum_harness::{FaultKind, Holder, TorturePlan};

/// The default run's plan for `lock` under `kinds`, for `duration` with
/// `seed`; `fenced`: the store checks fencing tokens.
pub(crate) fn default_plan<L>(
    lock: L,
    kinds: Vec<FaultKind>,
    duration: Duration,
    seed: u64,
    fenced: bool,
) -> TorturePlan<L> {
    let ttl = Duration::from_secs(2);
    TorturePlan {
        node_count: 5,
        drift_rate: Some(1.009),
        ttl,
        node_timeout: Duration::from_millis(100),
        duration,
        clients: 32,
        resources: 4,
        groups: 4,
        kinds,
        fault_nodes: (1, 2),
        fault_gap: (Duration::ZERO, Duration::from_millis(300)),
        fault_length: ttl / 2,
        client_pause: ttl * 2,
        holders: vec![
            (Holder::Brief, 12),
            (Holder::ToDeadline, 3),
            (Holder::Extending, 1),
            (Holder::Paused, 1),
            (Holder::Renewing, 2),
        ],
        fenced_store: fenced,
        check_before_write: true,
        pause_past: ttl / 2,
        seed,
        drop_chance: 0.0,
        ..TorturePlan::new(lock)
    }
}
