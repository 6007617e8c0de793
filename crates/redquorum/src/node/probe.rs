//! Health probes: what a node says about itself (`INFO`, `CONFIG GET
//! appendfsync`), asked by a background task per node after every
//! (re)connection and then periodically. Probes never run on the lock path:
//! votes read the cached result (health/eligibility.rs).

use std::sync::Weak;
use std::time::{Duration, Instant};

use fred::clients::Client;
use fred::error::{Error as FredError, ErrorKind};
use fred::interfaces::{ClientLike, EventInterface};
use fred::types::{ClusterHash, CustomCommand, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use crate::health::eligibility::Eligibility;
use crate::health::node_health::{Probe, Role};
use crate::node_id::NodeId;

/// Asks the node what it is (`INFO`, `CONFIG GET appendfsync`) and caches
/// the answer in `eligibility`. A user denied these commands gets "unknown"
/// fields; a timeout or a connection error keeps the previous result (and
/// an unverified node stays unverified).
pub(crate) async fn probe(client: &Client, id: &NodeId, eligibility: &Eligibility) {
    let epoch = eligibility.probe_epoch();
    let started = Instant::now();
    let info = match command(client, "INFO", vec![]).await {
        Ok(Value::String(text)) => Some(text.to_string()),
        Ok(other) => other.as_string(),
        Err(e) if is_transport(&e) => return,
        Err(e) => {
            tracing::debug!(node = %id, error = %e, "INFO denied; health unknown");
            None
        }
    };
    let config = vec!["GET".into(), "appendfsync".into()];
    let appendfsync = match command(client, "CONFIG", config).await {
        Ok(Value::Array(values)) => values.get(1).and_then(Value::as_string),
        Ok(_) => None,
        Err(e) if is_transport(&e) => return,
        Err(e) => {
            tracing::debug!(node = %id, error = %e, "CONFIG GET denied; durability unknown");
            None
        }
    };
    let probe = Probe::parse(info.as_deref(), appendfsync.as_deref());
    let (previous, clock_fault) = eligibility.record(probe.clone(), epoch, started);
    if let Some(fault) = clock_fault {
        tracing::warn!(node = %id, %fault, "node clock misbehaved: its votes are refused until it is stable");
        crate::metrics::node_clock_fault(id);
    }
    // Warn once per change, not at every probe: the uptime always changes.
    if previous.settings() != probe.settings() || previous.run_id.is_none() {
        log(id, &probe);
    }
    crate::metrics::node_eligible(id, eligibility.refusal().is_none());
}

/// Logs at warn level only what is wrong; a healthy node logs at debug.
fn log(node: &NodeId, probe: &Probe) {
    if probe.too_old() {
        let version = probe.version.as_deref().unwrap_or_default();
        tracing::warn!(%node, version, "server too old for the lock scripts: its votes are refused; use 5.0 or later");
    }
    if probe.role == Role::Replica {
        tracing::warn!(%node, "node is a replica: its votes are refused; configure masters only");
    }
    if let Some(policy) = probe
        .eviction_policy
        .as_deref()
        .filter(|p| *p != "noeviction")
    {
        tracing::warn!(%node, policy, "maxmemory-policy may evict lock keys; use noeviction");
    }
    tracing::debug!(%node, role = %probe.role, durability = %probe.durability, "node probed");
}

/// Probes after every (re)connection and every `interval`, until the
/// eligibility cache (the node) is gone.
pub(crate) fn spawn_prober(
    client: Client,
    id: NodeId,
    eligibility: Weak<Eligibility>,
    interval: Duration,
) -> JoinHandle<()> {
    // Subscribed before connect(), so the first connection's event is seen too.
    let mut reconnects = client.reconnect_rx();
    tokio::spawn(async move {
        loop {
            let reconnections = tokio::select! {
                event = reconnects.recv() => match event {
                    Ok(_) => 1,
                    Err(RecvError::Lagged(missed)) => missed,
                    Err(RecvError::Closed) => return,
                },
                // the periodic probe
                () = tokio::time::sleep(interval) => 0,
            };
            let Some(eligibility) = eligibility.upgrade() else {
                return;
            };
            eligibility.checker_saw_reconnect(reconnections);
            probe(&client, &id, &eligibility).await;
        }
    })
}

async fn command(
    client: &Client,
    name: &'static str,
    args: Vec<Value>,
) -> Result<Value, FredError> {
    let command = CustomCommand::new_static(name, ClusterHash::Random, false);
    client.custom(command, args).await
}

/// Errors that say nothing about the node's answer: it was not reached.
fn is_transport(error: &FredError) -> bool {
    matches!(
        error.kind(),
        ErrorKind::Timeout | ErrorKind::IO | ErrorKind::Canceled
    )
}
