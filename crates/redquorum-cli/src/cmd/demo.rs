//! `redquorum demo`: the lock's behaviour, step by step, on real nodes.

use std::process::ExitCode;
use std::time::Duration;

use redquorum::{Error, Lock, Redlock};

use crate::exit;
use crate::nodes_arg::NodesArg;

/// Options of `redquorum demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// How many local nodes to start when no --nodes are given.
    #[arg(short = 'n', long, default_value_t = 5)]
    node_count: usize,
}

pub(crate) async fn run(nodes: &NodesArg, args: DemoArgs) -> ExitCode {
    let nodes = match nodes.given_or_local(args.node_count) {
        Ok(nodes) => nodes,
        Err(e) => {
            eprintln!("redquorum demo: {e}");
            return exit::UNAVAILABLE.into();
        }
    };
    let urls = nodes.urls();
    let redlock = match Redlock::builder()
        .nodes(&urls)
        .ttl(Duration::from_secs(10))
        .build()
    {
        Ok(redlock) => redlock,
        Err(e) => {
            eprintln!("redquorum demo: {e}");
            return exit::USAGE.into();
        }
    };
    // Node ids (host:port), never the URLs: those may carry passwords.
    let ids: Vec<String> = redlock.nodes().map(ToString::to_string).collect();
    println!("nodes: {}", ids.join(", "));
    match story(&redlock, nodes.local()).await {
        Ok(()) => {
            println!("demo finished: every step behaved as the algorithm promises");
            ExitCode::SUCCESS
        }
        Err(problem) => {
            eprintln!("redquorum demo: FAILED: {problem}");
            exit::SOFTWARE.into()
        }
    }
}

async fn story(
    redlock: &Redlock,
    local: Option<&redquorum_harness::Cluster>,
) -> Result<(), String> {
    let resource = format!("demo:coupon:{}", std::process::id());
    println!(
        "\n1. client A locks {resource:?} on a quorum of {} of {} nodes",
        redlock.quorum(),
        redlock.nodes().count()
    );
    let a = redlock
        .try_lock(&resource)
        .await
        .map_err(|e| format!("A could not lock: {e}"))?;
    describe("A", &a);

    println!("\n2. client B tries the same resource while A holds it");
    match redlock.try_lock(&resource).await {
        Err(Error::Contended { outcomes, .. }) => {
            println!("   B is refused: contended ({outcomes})")
        }
        Ok(_) => return Err("B got a lock A holds".into()),
        Err(e) => return Err(format!("B failed for another reason: {e}")),
    }

    println!("\n3. A releases; B takes it");
    let released = a
        .release()
        .await
        .map_err(|e| format!("A's release failed: {e}"))?;
    println!("   A released on {released} nodes");
    let b = redlock
        .try_lock(&resource)
        .await
        .map_err(|e| format!("B could not lock after release: {e}"))?;
    describe("B", &b);
    b.release()
        .await
        .map_err(|e| format!("B's release failed: {e}"))?;

    if let Some(cluster) = local {
        let minority = cluster.len() / 2;
        println!(
            "\n4. crash {minority} of {} nodes (kill -9): a majority still grants the lock",
            cluster.len()
        );
        for i in 0..minority {
            cluster.kill(i).map_err(|e| e.to_string())?;
        }
        let c = redlock
            .try_lock(&resource)
            .await
            .map_err(|e| format!("no lock with a majority up: {e}"))?;
        describe("C", &c);
        c.release()
            .await
            .map_err(|e| format!("C's release failed: {e}"))?;

        println!("\n5. crash one more: without a majority, locking fails fast and says why");
        cluster.kill(minority).map_err(|e| e.to_string())?;
        match redlock.try_lock(&resource).await {
            Err(Error::Unavailable { outcomes, .. }) => {
                println!("   refused: unavailable ({outcomes})")
            }
            Ok(_) => return Err("got a lock without a majority".into()),
            Err(e) => return Err(format!("expected unavailable, got: {e}")),
        }
        for i in 0..=minority {
            cluster.restart(i).map_err(|e| e.to_string())?;
        }
        println!("   nodes restarted");
    }
    Ok(())
}

fn describe(who: &str, lock: &Lock) {
    println!(
        "   {who} holds it: owner {}, valid for {:?}",
        lock.owner(),
        lock.validity()
    );
}
