//! A group's lock client is closed before its runtime stops: what the
//! library finishes in the background after a release returned (its
//! stragglers to the slower nodes) lands instead of being cut, so the
//! checker never sees a key outlive a release the library did send.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redquorum_harness::{
    ClientPauser, Cluster, Grant, History, Locker, ProtectedStore, Refusal, WorkloadConfig,
    run_workload_groups,
};
use tokio::task::JoinHandle;

/// Grants at once; each release returns at once and leaves a straggler
/// that lands `late` afterwards on the group's runtime (a slow node's
/// answer), which `close` waits for.
#[derive(Default)]
struct Straggling {
    released: Arc<AtomicUsize>,
    landed: Arc<AtomicUsize>,
    stragglers: Mutex<Vec<JoinHandle<()>>>,
}

impl Locker for Straggling {
    type Held = ();

    async fn acquire(&self, _resource: &str) -> Result<Grant<()>, Refusal> {
        let deadline = Instant::now() + Duration::from_secs(60);
        Ok(Grant::new((), "owner".into(), deadline))
    }

    async fn release(&self, _held: ()) -> Result<(), String> {
        self.released.fetch_add(1, Ordering::SeqCst);
        let landed = Arc::clone(&self.landed);
        let straggler = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            landed.fetch_add(1, Ordering::SeqCst);
        });
        self.stragglers.lock().unwrap().push(straggler);
        Ok(())
    }

    async fn close(&self) {
        let stragglers = std::mem::take(&mut *self.stragglers.lock().unwrap());
        for straggler in stragglers {
            let _ = straggler.await;
        }
    }
}

#[tokio::test]
async fn every_release_straggler_lands_before_a_group_stops() {
    let cluster = Cluster::start(1).expect("store node");
    let store = ProtectedStore::new(&cluster.host_port(0));
    store.reset_blocking("r").unwrap();
    let config = WorkloadConfig {
        clients: 2,
        resources: vec!["r".into()],
        duration: Duration::from_millis(200),
        ..WorkloadConfig::default()
    };
    let (released, landed) = (Arc::default(), Arc::default());
    let make = {
        let (released, landed) = (Arc::clone(&released), Arc::clone(&landed));
        move |_group: usize| Straggling {
            released: Arc::clone(&released),
            landed: Arc::clone(&landed),
            ..Straggling::default()
        }
    };
    let pauser = ClientPauser::default();
    let history = run_workload_groups(History::new(), 2, make, store, &config, &pauser).await;
    let released = released.load(Ordering::SeqCst);
    assert!(released > 0, "{:?}", history.sessions());
    assert_eq!(landed.load(Ordering::SeqCst), released, "stragglers cut");
}
