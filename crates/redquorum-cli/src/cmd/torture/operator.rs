//! The torture run's operator: beside the clients, it inspects resources
//! (`Redlock::inspect`: the holders a quorum names) and force-releases them
//! (`Redlock::force_release`) at a steady pace, through the fault proxies of
//! the first client group, and records each call for the checker (the
//! harness's `operator.rs` has the promises it holds them to).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redquorum::Redlock;
use redquorum_harness::{History, OperatorAction, OperatorCall, OperatorLog};

/// How often the operator calls, per kind of call (`None`: never).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Pace {
    pub(crate) inspect_every: Option<Duration>,
    pub(crate) force_release_every: Option<Duration>,
}

impl Pace {
    /// Whether the operator makes no call at all (the run has none).
    pub(crate) fn is_idle(self) -> bool {
        self.inspect_every.is_none() && self.force_release_every.is_none()
    }
}

/// Calls at `pace` on the resources in turn until `finished`, into `log`.
pub(crate) async fn run(
    redlock: Redlock,
    resources: Vec<String>,
    pace: Pace,
    history: History,
    log: OperatorLog,
    finished: Arc<AtomicBool>,
) {
    let inspect = every(pace.inspect_every, &resources, &finished, |resource| {
        let (redlock, history, log) = (&redlock, &history, &log);
        async move {
            let start = history.now();
            let Ok(inspection) = redlock.inspect(&resource).await else {
                return;
            };
            let answered = inspection.nodes().filter(|(_, view)| view.is_ok()).count();
            let holders = inspection.holders(redlock.quorum());
            log.record(OperatorCall {
                resource,
                start,
                end: history.now(),
                action: OperatorAction::Inspect {
                    holders: holders.into_iter().map(|(_, token)| token).collect(),
                    answered,
                },
            });
        }
    });
    let force = every(
        pace.force_release_every,
        &resources,
        &finished,
        |resource| {
            let (redlock, history, log) = (&redlock, &history, &log);
            async move {
                let start = history.now();
                let fence = redlock.force_release(&resource).await.ok();
                log.record(OperatorCall {
                    resource,
                    start,
                    end: history.now(),
                    action: OperatorAction::ForceRelease {
                        fence: fence.map(|token| token.get()),
                    },
                });
            }
        },
    );
    tokio::join!(inspect, force);
}

/// Runs `call` on each resource in turn, one every `period`, until `finished`.
async fn every<F, Fut>(
    period: Option<Duration>,
    resources: &[String],
    finished: &AtomicBool,
    mut call: F,
) where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let Some(period) = period else {
        return;
    };
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for resource in resources.iter().cycle() {
        ticks.tick().await;
        if finished.load(Ordering::SeqCst) {
            return;
        }
        call(resource.clone()).await;
    }
}
