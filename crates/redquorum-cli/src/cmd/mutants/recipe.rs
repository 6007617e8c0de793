//! Which run each planted bug gets: the default torture (with the one
//! feature its bug lives in), or with `--recipes` the focused run it was
//! written with.

use std::time::Duration;

use redquorum::mutants::Mutant;
use redquorum_adapter::LockKind;
use redquorum_harness::{FaultKind, Holder, OperatorPace, Persistence};

use super::MutantsArgs;
use crate::cmd::torture::lock::{Lock, Plan};

/// The default run for `mutant`: bare, or with the one feature its bug
/// lives in turned on (the flags a user of that feature passes).
fn default_run_for(mutant: Mutant) -> (&'static str, &'static [&'static str]) {
    match mutant {
        Mutant::LockDelayIgnored => (
            "the default run with `--lock-delay 2s`",
            &["--lock-delay", "2s"],
        ),
        Mutant::ClockMonitorBlind => (
            "the default run with `--fast-node 3`",
            &["--fast-node", "3"],
        ),
        // Its bug shows when a force-release lands late: the operator's
        // client group cut off some nodes while it calls, and a hold taken
        // meanwhile lasting until the cut heals. The default run cuts the
        // operator's group off a minority, holding its bytes, for about
        // 0.4 % of its time (partitions are one fault in twelve, of one
        // group in four), so this recipe stays: no default pace reaches it.
        Mutant::ForceReleaseBlind => (
            "the default run with `--force-release-every 1s` under partitions alone, 2 client groups, faults up to 2 s, 500 ms leases",
            &[
                "--force-release-every",
                "1s",
                "--nemesis",
                "partition",
                "--groups",
                "2",
                "--fault-length",
                "2s",
                "--ttl",
                "500ms",
            ],
        ),
        // Their bugs show when an operator ousts or asks a hold its lock
        // keeps alive; the default run's operator, one force-release and
        // one ask in 5 s, meets 1 to 4 of those a minute.
        Mutant::LossNoticeDeaf | Mutant::AskUnheard => (
            "the default run with `--force-release-every 500ms`",
            &["--force-release-every", "500ms"],
        ),
        Mutant::NewPrimaryVotesAtOnce | Mutant::NewPrimaryDefaultVotes => (
            "the default run on cluster masters (`--cluster 2`: slot migrations, failovers, lagging failovers)",
            &["--cluster", "2"],
        ),
        _ => (
            "the default run: every kind on shared names, every fault",
            &[],
        ),
    }
}

/// The run that makes `mutant` bite, within the assumptions: for the bug
/// classes ([`Mutant::CLASSES`]), the default `redquorum torture`.
pub(super) fn recipe(mutant: Mutant, args: &MutantsArgs) -> (&'static str, Plan) {
    if !args.recipes || Mutant::CLASSES.contains(&mutant) {
        let (recipe, flags) = default_run_for(mutant);
        match crate::cmd::torture::default_plan(args.duration, args.seed, flags) {
            Ok(plan) => {
                let plan = Plan {
                    quiet: true,
                    command: format!("redquorum mutants --only {mutant}"),
                    ..plan
                };
                return (recipe, plan);
            }
            Err(problem) => stderr_line!("mutants: {mutant}: the default run: {problem}"),
        }
    }
    let ttl = Duration::from_secs(2);
    let base = Plan {
        given: Vec::new(),
        node_count: 5,
        cluster_shards: None,
        persistence: Persistence::AofEverySec,
        fast_clocks: None,
        fast_node: None,
        drift_rate: None,
        clock_ahead: None,
        store: None,
        ttl,
        node_timeout: Duration::from_millis(100),
        duration: args.duration,
        clients: 12,
        resources: 1,
        groups: 2,
        kinds: Vec::new(),
        fault_nodes: (1, 2),
        fault_gap: (Duration::ZERO, Duration::from_millis(300)),
        fault_length: ttl / 2,
        client_pause: ttl,
        holders: vec![(Holder::Brief, 1)],
        fenced_store: true,
        check_before_write: true,
        pause_past: ttl / 2,
        seed: args.seed,
        lock: Lock::One(LockKind::Plain),
        drop_chance: 0.0,
        own_name_chance: 0.0,
        hand_over_chance: 0.0,
        lock_delay: Duration::ZERO,
        operator: OperatorPace::default(),
        quiet: true,
        mutant: None,
        command: format!("redquorum mutants --only {mutant}"),
    };
    match mutant {
        Mutant::ValidityUnreduced => (
            "holders use the lease to its deadline; every node's clock 0.8% fast (within the 1% drift factor)",
            Plan {
                fast_clocks: Some(1.008),
                holders: vec![(Holder::ToDeadline, 1)],
                ..base
            },
        ),
        Mutant::LongLease => (
            "holders use the lease to its deadline",
            Plan {
                holders: vec![(Holder::ToDeadline, 1), (Holder::Brief, 1)],
                ..base
            },
        ),
        Mutant::NoUnwind => (
            "16 brief holders on one resource: split votes leave partial keys",
            Plan {
                clients: 16,
                ..base
            },
        ),
        Mutant::NoOwnerCheck => (
            "brief and to-deadline holders on one resource; latency on a minority",
            Plan {
                clients: 16,
                holders: vec![(Holder::ToDeadline, 1), (Holder::Brief, 2)],
                kinds: vec![FaultKind::Latency],
                ..base
            },
        ),
        Mutant::MinorityQuorum => (
            "16 brief holders in 4 groups on one resource: attempts from different groups race and split the votes",
            Plan {
                clients: 16,
                groups: 4,
                ..base
            },
        ),
        Mutant::FenceWithoutWriteBack => (
            "node 0's clock 10 s ahead (its proposals run ahead); latency and stalls on a minority reorder answers",
            Plan {
                clock_ahead: Some(Duration::from_secs(10)),
                kinds: vec![FaultKind::Latency, FaultKind::Stall],
                resources: 2,
                ..base
            },
        ),
        Mutant::RevivingExtend => (
            "4 clients on 2 resources; holders pause past their lease, then extend and write; the store unfenced",
            Plan {
                holders: vec![(Holder::Extending, 1), (Holder::Brief, 2)],
                fenced_store: false,
                // Little contention: a revived lease needs the keys free when
                // the paused holder wakes (another holder came and went).
                clients: 4,
                resources: 2,
                ..base
            },
        ),
        Mutant::NoscriptAfterUnwind => (
            "script caches flushed on 1-2 nodes every 0-100 ms",
            Plan {
                kinds: vec![FaultKind::ScriptFlush],
                fault_gap: (Duration::ZERO, Duration::from_millis(100)),
                resources: 2,
                ..base
            },
        ),
        Mutant::PermitWithoutSlot => (
            "semaphore of 1 permit: 12 brief holders on one name",
            Plan {
                lock: Lock::One(LockKind::Semaphore),
                ..base
            },
        ),
        Mutant::SharedLeadership => (
            "election: 12 brief leaders (campaign, resign) on one name",
            Plan {
                lock: Lock::One(LockKind::Election),
                ..base
            },
        ),
        Mutant::LockDelayIgnored => (
            "a 2 s lock-delay; paused holders vanish (release after their hold expired), brief ones come next",
            Plan {
                lock_delay: ttl,
                holders: vec![(Holder::Paused, 1), (Holder::Brief, 2)],
                ..base
            },
        ),
        Mutant::AllOfLastOnly => (
            "all-of over 3 resources in a ring: each set is a resource and a neighbour (after, then before, in turn), 12 brief holders",
            Plan {
                lock: Lock::One(LockKind::AllOf),
                resources: 3,
                ..base
            },
        ),
        Mutant::ClockMonitorBlind => (
            "node 0's clock runs 3 times as fast; 16 holders in 4 groups race (split votes leave holds on a bare quorum) and use the lease to its deadline",
            Plan {
                fast_node: Some(3.0),
                holders: vec![(Holder::ToDeadline, 1), (Holder::Brief, 1)],
                clients: 16,
                groups: 4,
                ..base
            },
        ),
        Mutant::InspectAnyNode => (
            "an operator inspects every 20 ms; 12 brief holders on 2 resources; latency, stalls and resets on a minority (a release misses a node)",
            Plan {
                operator: OperatorPace {
                    inspect_every: Some(Duration::from_millis(20)),
                    force_release_every: None,
                    ..OperatorPace::default()
                },
                kinds: vec![FaultKind::Latency, FaultKind::Stall, FaultKind::Reset],
                resources: 2,
                ..base
            },
        ),
        Mutant::StaleForceFence => (
            "an operator force-releases every 200 ms; 12 holders on 2 resources, some to their deadline",
            Plan {
                operator: OperatorPace {
                    inspect_every: None,
                    force_release_every: Some(Duration::from_millis(200)),
                    ..OperatorPace::default()
                },
                holders: vec![(Holder::ToDeadline, 1), (Holder::Brief, 2)],
                resources: 2,
                ..base
            },
        ),
        Mutant::ForceReleaseBlind => (
            "an operator force-releases every second; partitions of up to 2 s cut a client group (the operator's half the time) off some nodes; 12 holders in 2 groups, half of them to the deadline of a 500 ms lease",
            Plan {
                operator: OperatorPace {
                    inspect_every: None,
                    force_release_every: Some(Duration::from_secs(1)),
                    ..OperatorPace::default()
                },
                kinds: vec![FaultKind::Partition],
                ttl: Duration::from_millis(500),
                fault_length: Duration::from_secs(2),
                holders: vec![(Holder::ToDeadline, 1), (Holder::Brief, 1)],
                ..base
            },
        ),
        Mutant::NewPrimaryVotesAtOnce => (
            "3 cluster masters of 2 shards; lagging failovers on 2 of them at once; 16 holders in 4 groups on 2 resources, half of them to their deadline",
            Plan {
                node_count: 3,
                cluster_shards: Some(2),
                kinds: vec![FaultKind::LaggingFailover],
                fault_nodes: (2, 2),
                // Brief holders free a resource while the replicas are cut
                // off; a to-deadline one granted then still holds when they
                // take over without its hold.
                holders: vec![(Holder::ToDeadline, 1), (Holder::Brief, 1)],
                clients: 16,
                groups: 4,
                resources: 2,
                ..base
            },
        ),
        _ => ("no recipe", base),
    }
}
