use std::process::ExitCode;
use std::time::Duration;

use redquorum::Redlock;

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // The error's sentence: what happened, on which node.
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // Exported by step 1's `eval`, in that shell only.
    let nodes = std::env::var("REDQUORUM_NODES").map_err(|_| {
        "REDQUORUM_NODES is not set: run this where you ran `redquorum nodes up`, \
         or export the line it printed"
    })?;
    let redlock = Redlock::builder()
        .nodes(nodes.split(','))
        .ttl(Duration::from_secs(10)) // each node's lease
        // The delayed-restart rule: a node that does not fsync every write
        // and has been up for less than max_ttl may have lost, in a crash,
        // locks it granted: its votes do not count until then. Nodes from
        // `redquorum nodes up --durable` fsync every write and vote at once.
        .max_ttl(Duration::from_secs(60))
        .build()?;

    let mut lock = redlock.lock("orders:user-42").await?; // retries until `wait` (default 10 s)
    let nodes = redlock.nodes().count();
    println!(
        "locked {} (quorum {} of {nodes})",
        lock.resource(),
        redlock.quorum()
    );
    // ... work, finished before lock.deadline() ...
    let validity = lock.extend().await?; // a fresh lease, on a quorum
    println!("extended: valid for {validity:?} more");
    lock.release().await?;
    println!("released");
    Ok(())
}
