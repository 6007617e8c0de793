//! The harness's own faults, on real nodes: each fault does what it claims.

use std::time::{Duration, Instant};

use redquorum_harness::{Cluster, FaultProxy, Persistence, Reply, RespConn, faketime_support};

fn proxy_for(cluster: &Cluster) -> FaultProxy {
    FaultProxy::start(&cluster.host_port(0)).expect("proxy")
}

#[test]
fn a_set_sent_into_a_stall_times_out_yet_lands_after_the_heal() {
    let cluster = Cluster::start(1).unwrap();
    let proxy = proxy_for(&cluster);
    let mut conn = RespConn::connect_addr(
        &format!("127.0.0.1:{}", proxy.port()),
        Duration::from_secs(2),
    )
    .unwrap();
    proxy.stall();
    conn.send(&["SET", "late", "v", "PX", "60000"]).unwrap();
    assert!(
        conn.read(Duration::from_millis(200)).is_err(),
        "stalled: no reply"
    );
    assert!(
        cluster
            .command(0, &["GET", "late"])
            .unwrap()
            .as_text()
            .is_none()
    );
    proxy.heal();
    let deadline = Instant::now() + Duration::from_secs(5);
    while cluster
        .command(0, &["GET", "late"])
        .unwrap()
        .as_text()
        .is_none()
    {
        assert!(Instant::now() < deadline, "the held SET never landed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn latency_delays_each_round_trip_at_least_twice_the_delay() {
    let cluster = Cluster::start(1).unwrap();
    let proxy = proxy_for(&cluster);
    proxy.set_latency(Duration::from_millis(100));
    let mut conn = RespConn::connect(proxy.port()).unwrap();
    let start = Instant::now();
    conn.command(&["PING"]).unwrap();
    // one delay each way; a lower bound only, never an upper one
    assert!(start.elapsed() >= Duration::from_millis(200));
}

#[test]
fn refuse_resets_open_and_new_connections_until_healed() {
    let cluster = Cluster::start(1).unwrap();
    let proxy = proxy_for(&cluster);
    let mut open = RespConn::connect(proxy.port()).unwrap();
    open.command(&["PING"]).unwrap();
    proxy.set_mode(redquorum_harness::ProxyMode::Refuse);
    assert!(open.command(&["PING"]).is_err());
    let fresh = RespConn::connect(proxy.port()).and_then(|mut c| c.command(&["PING"]));
    assert!(fresh.is_err());
    proxy.heal();
    let mut healed = RespConn::connect(proxy.port()).unwrap();
    assert!(healed.command(&["PING"]).is_ok());
}

#[test]
fn rollback_loses_writes_after_the_snapshot_even_with_aof_always() {
    let cluster = Cluster::start_with(1, Persistence::AofAlways).unwrap();
    cluster.command(0, &["SET", "before", "1"]).unwrap();
    cluster.snapshot(0).unwrap();
    cluster.command(0, &["SET", "after", "1"]).unwrap();
    cluster.restart(0).unwrap();
    assert!(
        cluster
            .command(0, &["GET", "after"])
            .unwrap()
            .as_text()
            .is_some()
    );
    cluster.restart_from_snapshot(0).unwrap();
    assert!(
        cluster
            .command(0, &["GET", "before"])
            .unwrap()
            .as_text()
            .is_some()
    );
    assert!(
        cluster
            .command(0, &["GET", "after"])
            .unwrap()
            .as_text()
            .is_none()
    );
}

#[test]
fn a_paused_node_answers_after_resume_and_external_nodes_refuse_process_faults() {
    let cluster = Cluster::start(1).unwrap();
    cluster.pause(0).unwrap();
    let mut conn =
        RespConn::connect_addr(&cluster.host_port(0), Duration::from_millis(200)).unwrap();
    assert!(
        conn.command(&["PING"]).is_err(),
        "a stopped node does not answer"
    );
    cluster.resume(0).unwrap();
    assert!(cluster.command(0, &["PING"]).is_ok());
    let external = Cluster::external(cluster.urls()).unwrap();
    assert!(external.kill(0).is_err());
    assert!(external.pause(0).is_err());
    assert_eq!(
        external
            .clock_jump(0, Duration::from_millis(5), "lock:*")
            .unwrap(),
        0
    );
}

/// Whether libfaketime is here for `test`; says it is skipped when not,
/// and fails when `REDQUORUM_REQUIRE_FAKETIME` is set (CI has it).
fn has_faketime(test: &str) -> bool {
    let Err(why) = faketime_support() else {
        return true;
    };
    if std::env::var_os("REDQUORUM_REQUIRE_FAKETIME").is_some() {
        panic!("REDQUORUM_REQUIRE_FAKETIME is set but {why}");
    }
    eprintln!("SKIPPED {test}: {why}");
    false
}

#[test]
fn a_fast_clock_node_expires_keys_early() {
    if !has_faketime("a_fast_clock_node_expires_keys_early") {
        return;
    }
    let cluster = Cluster::builder(1).fast_clock(0, 10.0).start().unwrap();
    cluster
        .command(0, &["SET", "k", "v", "PX", "5000"])
        .unwrap();
    std::thread::sleep(Duration::from_millis(800)); // 8 s on the node's clock
    assert!(
        cluster
            .command(0, &["GET", "k"])
            .unwrap()
            .as_text()
            .is_none()
    );
}

/// Node `index`'s clock minus this process's wall clock, in ms (at the
/// midpoint of the `TIME` round trip).
fn clock_lead_ms(cluster: &Cluster, index: usize) -> f64 {
    let wall_ms = || {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.unwrap().as_secs_f64() * 1e3
    };
    let before = wall_ms();
    let Reply::Array(Some(reply)) = cluster.command(index, &["TIME"]).unwrap() else {
        panic!("TIME answers an array");
    };
    let after = wall_ms();
    let parts: Vec<f64> = reply
        .iter()
        .map(|part| part.as_text().unwrap().parse().unwrap())
        .collect();
    parts[0] * 1e3 + parts[1] / 1e3 - (before + after) / 2.0
}

#[test]
fn a_restarted_fast_clock_node_keeps_its_lead() {
    // A machine's clock does not go back when Redis restarts: a fast node's
    // clock counts from when the cluster started, not from its process's
    // start, so a restart does not turn it back by its lead.
    if !has_faketime("a_restarted_fast_clock_node_keeps_its_lead") {
        return;
    }
    let cluster = Cluster::builder(1).fast_clock(0, 2.0).start().unwrap();
    std::thread::sleep(Duration::from_millis(500)); // a lead of about 500 ms
    let before = clock_lead_ms(&cluster, 0);
    assert!(before > 300.0, "the fast clock leads by {before} ms");
    cluster.restart(0).unwrap();
    // The lead only grows; a clock counted from the new process's start
    // would lead by the few ms since the restart.
    let after = clock_lead_ms(&cluster, 0);
    assert!(
        after >= before - 5.0,
        "lead {before} ms before the restart, {after} ms after"
    );
}

#[test]
fn a_flushed_call_answers_noscript_after_the_proxy_loaded_the_script_back() {
    let cluster = Cluster::start(1).unwrap();
    let proxy = proxy_for(&cluster);
    let body = "return 7";
    let sha = cluster
        .command(0, &["SCRIPT", "LOAD", body])
        .unwrap()
        .as_text()
        .unwrap();
    let exists = |cluster: &Cluster| cluster.command(0, &["SCRIPT", "EXISTS", &sha]).unwrap();
    let mut conn = RespConn::connect(proxy.port()).unwrap();
    // A body the client sent through the proxy is one it can load back.
    assert_eq!(
        conn.command(&["EVAL", body, "0"]).unwrap().as_int(),
        Some(7)
    );
    proxy.set_mode(redquorum_harness::ProxyMode::FlushScripts);
    // One call by digest in three is aimed at: flushed, NOSCRIPT ... (the
    // proxy's first flush, on a connection it has just opened, may reach
    // the node after the call).
    let mut noscript = false;
    for _ in 0..12 {
        match conn.command(&["EVALSHA", &sha, "0"]).unwrap() {
            Reply::Error(e) if e.starts_with("NOSCRIPT") => {
                // ... and by the time the client read it, the script was back.
                assert_eq!(
                    exists(&cluster),
                    Reply::Array(Some(vec![Reply::Integer(1)]))
                );
                noscript = true;
                break;
            }
            answer => assert_eq!(answer.as_int(), Some(7)),
        }
    }
    assert!(noscript, "no aimed flush struck: {}", proxy.script_counts());
    assert_eq!(
        conn.command(&["EVALSHA", &sha, "0"]).unwrap().as_int(),
        Some(7)
    );
    let counts = proxy.script_counts();
    assert_eq!((counts.noscript, counts.reloads), (1, 1), "{counts}");
    // The NOSCRIPT answer waited for the load, and the proxy measured it
    // (the fault's excuse is bounded by it): told once, then reset.
    let within = std::time::Duration::from_secs(1);
    let held = proxy.take_longest_hold(within).unwrap();
    assert!(held > std::time::Duration::ZERO, "{counts}");
    assert_eq!(
        counts.longest_hold_us,
        u64::try_from(held.as_micros()).unwrap()
    );
    assert_eq!(
        proxy.take_longest_hold(within),
        Some(std::time::Duration::ZERO)
    );
}
