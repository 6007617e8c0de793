//! The options of `redquorum torture`, and the run's plan resolved from
//! them (defaults, the `--soak` run, and the combinations refused as usage
//! errors; those of `--cluster` in `cluster.rs`).

use std::path::PathBuf;
use std::time::Duration;

use redquorum_harness::{FaultKind, OperatorPace, Persistence};

use super::cluster;
use super::lock::{Lock, Plan};
use crate::arg_values;
use crate::nodes_arg::NodesArg;

/// Options of `redquorum torture`.
#[derive(Debug, clap::Args)]
pub(crate) struct TortureArgs {
    /// How long clients keep locking; above zero [default: 60s; 25m with --soak].
    #[arg(long, value_parser = arg_values::positive_duration)]
    duration: Option<Duration>,
    /// Concurrent clients [default: 32; 96 with --soak].
    #[arg(long)]
    clients: Option<usize>,
    /// Resources the clients contend for [default: 4; 64 with --soak].
    #[arg(long)]
    resources: Option<usize>,
    /// Client groups, each with its own fault proxies and runtime (partitions
    /// and pauses hit one group).
    #[arg(long, default_value_t = 4)]
    groups: usize,
    /// Faults: `all` (kill,pause,latency,stall,reset,clock,partition,
    /// script-flush,strobe,slow-majority,restart-majority,fence-loss: within
    /// the assumptions; fence-loss strikes nodes whose clocks lead, and
    /// is left out with --fast-clocks, --clock-ahead or --fast-node),
    /// `none`, or a comma list of those and client-pause (fenced holders
    /// only), forget (outside the assumptions) [default: all;
    /// all,client-pause with --soak]. With --cluster: `all` is migrate,
    /// failover, lagging-failover (the faults of cluster masters, which
    /// need it), and the others are refused.
    #[arg(long)]
    nemesis: Option<String>,
    /// Each of the -n masters is a local Redis Cluster of S shards (1 to
    /// 16), each shard's primary with 1 replica, locked through
    /// `redis-cluster://` URLs. The nemesis then moves the slots of the
    /// resources' lock keys between shards (migrate, whole or in two steps
    /// with ASK between them) and fails their shards over (failover, a
    /// replica caught up; lagging-failover, a replica promoted without the
    /// latest holds, on up to N/2 + 1 masters). The faults that address
    /// one server (kill, pause, latency, stall, reset, clock, partition,
    /// script-flush, strobe, the majority kinds, client-pause, forget,
    /// fence-loss) stay single-server, and --nodes, --fast-clocks,
    /// --clock-ahead and --fast-node are not taken with it.
    #[arg(long, value_name = "S", value_parser = crate::arg_values::shards)]
    cluster: Option<u16>,
    /// Each fault hits exactly N nodes (default: 1 to N/2 at random, and a
    /// script flush, which loses no key, 1 to N/2 + 1 where N/2 > 1; more
    /// than N/2 is outside the assumptions). With --cluster: the masters a
    /// lagging failover hits (default: 1 to N/2 + 1, within the
    /// assumptions); migrations and clean failovers hit 1 to N.
    #[arg(long)]
    fault_nodes: Option<usize>,
    /// Fixed quiet time between faults (default: 0 to 300 ms at random).
    #[arg(long, value_parser = humantime::parse_duration)]
    fault_gap: Option<Duration>,
    /// Longest fault (default: ttl / 2).
    #[arg(long, value_parser = humantime::parse_duration)]
    fault_length: Option<Duration>,
    /// Longest client pause (default: 2 × ttl).
    #[arg(long, value_parser = humantime::parse_duration)]
    client_pause: Option<Duration>,
    /// Holder mix as kind=weight: brief, to-deadline, extending, paused,
    /// renewing [default: brief=12,to-deadline=3,extending=1,paused=1,renewing=2;
    /// brief=30,... with --soak].
    #[arg(long)]
    holders: Option<String>,
    /// The protected store ignores fencing tokens (paused holders then lose updates).
    #[arg(long)]
    no_fencing: bool,
    /// Holders write without checking their deadline first (as Jepsen's lock clients do).
    #[arg(long)]
    unchecked_writes: bool,
    /// How far past its deadline a paused holder sleeps (default: ttl / 2;
    /// ttl with --lock-delay).
    #[arg(long, value_parser = humantime::parse_duration)]
    pause_past: Option<Duration>,
    /// Every local node's clock runs this many times as fast (libfaketime), e.g. 1.008.
    #[arg(long)]
    fast_clocks: Option<f64>,
    /// Node 0's wall clock runs this far ahead (libfaketime).
    #[arg(long, value_parser = humantime::parse_duration)]
    clock_ahead: Option<Duration>,
    /// Node 0's clock alone runs this many times as fast (libfaketime), e.g.
    /// 3: outside the drift allowance, so the lock's node clock monitoring
    /// must take its vote away (each client probes every ttl / 10).
    #[arg(long)]
    fast_node: Option<f64>,
    /// The long run: 25 minutes, 96 clients, 64 resources, mostly brief
    /// holders, every fault within the assumptions plus client pauses
    /// (the store is fenced).
    #[arg(long)]
    soak: bool,
    /// Print the report as JSON (the last line stays `sessions=N violations=N leaked=N`).
    #[arg(long)]
    pub(super) json: bool,
    /// Lock TTL: short, so faults bite.
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    ttl: Duration,
    /// How many local nodes to start when no --nodes are given (odd; with
    /// --cluster, how many cluster masters).
    #[arg(short = 'n', long, default_value_t = 5)]
    node_count: usize,
    /// `host:port` of a Redis for the protected counters (default: a local one started here).
    #[arg(long)]
    store: Option<String>,
    /// Random seed for clients and nemesis.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// One lock kind for a focused run, each hold exclusive on its resource:
    /// plain, reentrant (a fresh owner per hold), write, read (readers
    /// share), any-of / all-of (`lock_any` over the one resource; `lock_all`
    /// over it and a neighbour among the resources, after or before it in
    /// turn), semaphore (one permit), election (a campaign; release is
    /// resign). Default: every kind at once on the same names (plain, write,
    /// readers, one reentrant owner per client group, permits of a
    /// 2-permit semaphore, any-of, all-of, election), and 8% of acquires
    /// and releases dropped part-way (with --lock-delay, --fast-node and an
    /// operator too).
    #[arg(long)]
    kind: Option<redquorum_adapter::LockKind>,
    /// The lock's lock-delay (e.g. 2s): the checker then requires that no
    /// grant comes within it after a holder that vanished (released only
    /// after its hold expired: the paused holders). Not with `--kind
    /// election`, whose leadership extends itself.
    #[arg(long, value_parser = humantime::parse_duration)]
    lock_delay: Option<Duration>,
    /// Holders hand holds over: 30% of the plain holds, when done, give
    /// their lease ticket to two adopters racing for it, and the checker
    /// judges the adopters as holders. On by default in the default run
    /// (every kind at once); not with `--kind`.
    #[arg(long, overrides_with = "no_hand_overs")]
    hand_overs: bool,
    /// The default run without hand-overs: every plain hold is released by
    /// its holder.
    #[arg(long, overrides_with = "hand_overs")]
    no_hand_overs: bool,
    /// An operator inspects a resource (in turn) every D, e.g. 20ms: the
    /// checker then requires that an inspection names only holders a quorum
    /// of its own answers held and none whose release a quorum confirmed,
    /// and that one every node answered names every certain holder. Not with `--fast-node` [default: 200ms, none with
    /// --fast-node or when --force-release-every alone is given].
    #[arg(long, value_name = "D", value_parser = humantime::parse_duration)]
    inspect_every: Option<Duration>,
    /// An operator force-releases a resource every D, e.g. 300ms (in
    /// turn, or the one its inspections named the same holder of longest):
    /// overlaps it causes are excused, and the checker requires its token
    /// to be above every earlier holder's and below every later one's. Not
    /// with `--no-fencing` or `--lock-delay` (it clears both by design)
    /// [default: 5s, none with --no-fencing or --lock-delay or when
    /// --inspect-every alone is given].
    #[arg(long, value_name = "D", value_parser = humantime::parse_duration)]
    force_release_every: Option<Duration>,
    /// Write the run (sessions, faults, key audit) to FILE as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub(super) history: Option<PathBuf>,
    /// Check a history written by --history again, instead of running.
    #[arg(long, value_name = "FILE", conflicts_with = "history")]
    pub(super) recheck: Option<PathBuf>,
    /// Plant a bug in the library for this run (builds with `--cfg redquorum_mutants` only).
    #[cfg(redquorum_mutants)]
    #[arg(long)]
    pub(super) mutant: Option<redquorum::mutants::Mutant>,
}

/// The run's plan from the command line; `Err` is a usage error.
pub(super) fn plan(nodes: &NodesArg, args: &TortureArgs) -> Result<Plan, String> {
    let given = nodes.urls().to_vec();
    let count = if given.is_empty() {
        args.node_count
    } else {
        given.len()
    };
    if count == 0 || count % 2 == 0 {
        return Err(format!(
            "{count} nodes: Redlock needs an odd number of nodes (a majority of an even count tolerates no more failures than the odd count below it)"
        ));
    }
    let soak = args.soak;
    let sharded = args.cluster.is_some();
    if sharded {
        cluster::refuse_with_cluster(&[
            (!given.is_empty(), "--nodes"),
            (args.fast_clocks.is_some(), "--fast-clocks"),
            (args.clock_ahead.is_some(), "--clock-ahead"),
            (args.fast_node.is_some(), "--fast-node"),
        ])?;
    }
    let nemesis = args.nemesis.as_deref().unwrap_or(if soak && !sharded {
        "all,client-pause"
    } else {
        "all"
    });
    let mut kinds = cluster::kinds(nemesis, args.cluster.map(usize::from))?;
    // The nemesis aims fence-loss at nodes whose clocks lead; clocks set
    // by hand are left out of that (`all` then goes without it).
    if args.fast_clocks.is_some() || args.clock_ahead.is_some() || args.fast_node.is_some() {
        if nemesis.split(',').any(|k| k.trim() == "fence-loss") {
            return Err("--nemesis fence-loss is not taken with --fast-clocks, --clock-ahead or --fast-node (a node that lost its counter proposes from its own clock, and those clocks stay apart for the whole run)".into());
        }
        kinds.retain(|k| *k != FaultKind::FenceLoss);
    }
    let holders = arg_values::parse_holders(args.holders.as_deref().unwrap_or(if soak {
        "brief=30,to-deadline=1,extending=1,paused=1,renewing=1"
    } else {
        "brief=12,to-deadline=3,extending=1,paused=1,renewing=2"
    }))?;
    let duration = args
        .duration
        .unwrap_or(Duration::from_secs(if soak { 25 * 60 } else { 60 }));
    let clients = args.clients.unwrap_or(if soak { 96 } else { 32 });
    let resources = args.resources.unwrap_or(if soak { 64 } else { 4 });
    if clients == 0 || resources == 0 || args.groups == 0 || args.ttl < Duration::from_millis(200) {
        return Err("need --clients, --resources and --groups ≥ 1 and --ttl ≥ 200ms".into());
    }
    if args.lock_delay.is_some_and(|d| !d.is_zero())
        && args.kind == Some(redquorum_adapter::LockKind::Election)
    {
        return Err("--lock-delay cannot be checked with --kind election: a leadership extends itself, so no holder vanishes".into());
    }
    if args
        .fast_node
        .is_some_and(|rate| !(rate > 1.0 && rate < 5.0))
    {
        return Err("--fast-node must be above 1 and below 5 (a faster clock can expire a key before two probes have seen it)".into());
    }
    let operator = operator_pace(args);
    if [operator.inspect_every, operator.force_release_every]
        .into_iter()
        .flatten()
        .any(|every| every < Duration::from_millis(1))
    {
        return Err("--inspect-every and --force-release-every must be at least 1ms".into());
    }
    if args.force_release_every.is_some() && (args.no_fencing || args.lock_delay.is_some()) {
        return Err("--force-release-every cannot be checked with --no-fencing or --lock-delay: a force-release lets the next holder in at once by design, and only fencing keeps the ousted holder's writes out".into());
    }
    if args.inspect_every.is_some() && args.fast_node.is_some() {
        return Err("--inspect-every cannot be checked with --fast-node: a hold on the fast node ends early, so an inspection may honestly miss a holder".into());
    }
    if args.hand_overs && args.kind.is_some() {
        return Err("--hand-overs needs the default run (every kind at once), not --kind: hand-overs are of plain holds beside the other kinds".into());
    }
    // Without --kind, every kind at once, whatever else is asked for.
    let lock = args.kind.map_or(Lock::Mixed, Lock::One);
    let minority = count / 2;
    let fault_nodes = match args.fault_nodes {
        Some(n) if n == 0 || n > count => return Err(format!("--fault-nodes must be 1..={count}")),
        Some(n) => {
            if n > minority && !sharded {
                stderr_line!(
                    "torture: --fault-nodes {n} of {count} is a majority: outside Redlock's assumptions"
                );
            }
            (n, n)
        }
        // A lagging failover on up to a majority is within the
        // assumptions (the new-primary rule); the other faults of cluster
        // masters pick 1 to N masters themselves.
        None if sharded => (1, count / 2 + 1),
        None => (1, minority.max(1)),
    };
    let fault_gap = args
        .fault_gap
        .map_or((Duration::ZERO, Duration::from_millis(300)), |gap| {
            (gap, gap)
        });
    Ok(Plan {
        given,
        node_count: args.node_count,
        cluster_shards: args.cluster.map(usize::from),
        // Local nodes keep an AOF: a killed node restarts at once yet
        // remembers its keys. Every second, it can lose an acknowledged
        // write (the delayed-restart rule then covers it); the mixed run's
        // groups without max_ttl (population.rs) need it written before the
        // reply, so a kill loses nothing they were told.
        persistence: if lock == Lock::Mixed {
            Persistence::AofAlways
        } else {
            Persistence::AofEverySec
        },
        fast_clocks: args.fast_clocks,
        clock_ahead: args.clock_ahead,
        fast_node: args.fast_node,
        // The mixed default run on local nodes: a majority's clocks 0.9 %
        // fast, within the 1 % drift allowance, so validity arithmetic off
        // by the drift term shows as an overlap (fence-loss then strikes the
        // fast majority, whose clocks lead).
        drift_rate: (lock == Lock::Mixed
            && !sharded
            && nodes.is_empty()
            && args.fast_clocks.is_none()
            && args.clock_ahead.is_none())
        .then_some(1.009),
        store: args.store.clone(),
        ttl: args.ttl,
        // The node timeout every client uses.
        node_timeout: Duration::from_millis(100),
        duration,
        clients,
        resources,
        groups: args.groups.min(clients),
        kinds,
        fault_nodes,
        fault_gap,
        fault_length: args.fault_length.unwrap_or(args.ttl / 2),
        client_pause: args.client_pause.unwrap_or(args.ttl * 2),
        holders,
        fenced_store: !args.no_fencing,
        check_before_write: !args.unchecked_writes,
        // With a lock-delay a paused holder must outlast its hold on every
        // node, even one that applied it a fault's length late, to count as
        // vanished: a whole TTL past its deadline.
        pause_past: args.pause_past.unwrap_or(if args.lock_delay.is_some() {
            args.ttl
        } else {
            args.ttl / 2
        }),
        seed: args.seed,
        lock,
        drop_chance: if lock == Lock::Mixed { 0.08 } else { 0.0 },
        // A quarter of the default run's sessions lock their client's own
        // name: uncontended holds, batched with the group's other calls.
        own_name_chance: if lock == Lock::Mixed { 0.25 } else { 0.0 },
        // In the default run some holders hand their hold over to two
        // adopters at once (plain holds only: the other kinds release), as
        // a user moving a lock between tasks or processes does.
        // Under faults that may excuse a leftover hold on a node, a planted
        // bug of the move needs many hand-overs a minute to show.
        hand_over_chance: if lock == Lock::Mixed && !args.no_hand_overs {
            0.3
        } else {
            0.0
        },
        lock_delay: args.lock_delay.unwrap_or_default(),
        operator,
        quiet: false,
        mutant: mutant_name(args),
        command: std::env::args().collect::<Vec<_>>().join(" "),
    })
}

/// The default run's inspections: one every 200 ms, of the resources in
/// turn, so each is looked at within a second (a hold a release missed on
/// one node lingers for the rest of its TTL: at one call a second over
/// four resources an inspection seldom fell in that window, and an
/// inspection that named a minority's holds escaped the run).
const DEFAULT_INSPECT_EVERY: Duration = Duration::from_millis(200);
/// The default run's force-releases: one every 5 s (of the resources in turn).
const DEFAULT_FORCE_RELEASE_EVERY: Duration = Duration::from_secs(5);

/// The operator's pace: what was asked for; else, in the default run
/// (every kind at once, single servers), the default pace where it can be
/// checked beside the other options (no force-release with --no-fencing or
/// --lock-delay, no inspection with --fast-node).
fn operator_pace(args: &TortureArgs) -> OperatorPace {
    let asked = args.inspect_every.is_some() || args.force_release_every.is_some();
    if asked || args.kind.is_some() || args.cluster.is_some() {
        return OperatorPace {
            inspect_every: args.inspect_every,
            force_release_every: args.force_release_every,
            by_default: false,
        };
    }
    OperatorPace {
        inspect_every: args.fast_node.is_none().then_some(DEFAULT_INSPECT_EVERY),
        force_release_every: (!args.no_fencing && args.lock_delay.is_none())
            .then_some(DEFAULT_FORCE_RELEASE_EVERY),
        by_default: true,
    }
}

#[cfg(redquorum_mutants)]
fn mutant_name(args: &TortureArgs) -> Option<String> {
    args.mutant.map(|m| m.to_string())
}

#[cfg(not(redquorum_mutants))]
fn mutant_name(_args: &TortureArgs) -> Option<String> {
    None
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
