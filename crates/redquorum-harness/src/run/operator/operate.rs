//! A torture run's operator: beside the clients, it inspects resources (the
//! holders a quorum names) and force-releases them at a steady pace, each
//! resource in turn (every other inspection takes the resource a holder
//! released last instead, if one did since: its key may still be on a
//! minority of nodes, the release's stragglers, which an inspection must
//! not count as held; a force-release takes the lock its inspections show
//! held longest instead, when one was named twice in a row: `stuck.rs`;
//! every other one takes the resource of a hold its lock keeps alive,
//! kept for [`KEPT_SETTLED`] at least, when there is one (the oldest of
//! those renewed in the last [`RENEWED_LATELY`], else the oldest): its
//! holder must learn of the loss from the lock's notice,
//! `check/notices.rs`; at the same pace, when the lock can ask, it asks
//! the holder of the newest such hold, of two or more, to let go, which
//! that holder must hear), and records each call in the run's
//! [`OperatorLog`](crate::OperatorLog) for the checker (`check/operator.rs`
//! has the promises it holds them to). The calls themselves are the lock's
//! ([`TortureOperator`]).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::stuck::Sightings;
use crate::check::KEPT_SETTLED;
use crate::evidence::{History, OperatorAction, OperatorCall, OperatorLog};
use crate::run::operator_pace::OperatorPace;

/// What an inspection answered: the holders it names, how many nodes
/// answered, and its evidence for the names (every token an answer held,
/// with how many answers held it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inspected {
    /// The owner tokens it names as holders (a quorum's).
    pub holders: Vec<String>,
    /// How many nodes answered.
    pub answered: usize,
    /// Every token an answer held, with how many answers held it.
    pub reported: BTreeMap<String, usize>,
}

/// An operator's calls on the lock under test.
pub trait TortureOperator: Send + Sync + 'static {
    /// Who holds `resource`, as the lock reports it: the owner tokens it
    /// names (a quorum's holders), how many nodes answered, and what each
    /// answer held; `None` when the inspection failed (it is not recorded).
    fn inspect(&self, resource: &str) -> impl Future<Output = Option<Inspected>> + Send;

    /// Releases `resource` whoever holds it; the fencing token it returned,
    /// `None` when it failed (it may still have freed the resource on some
    /// nodes).
    fn force_release(&self, resource: &str) -> impl Future<Output = Option<u64>> + Send;

    /// Asks whoever holds `resource` to let go and waits up to [`ASK_WAIT`]
    /// for it to be free: whether it was, `None` when the call failed or
    /// the lock has no such request (the default: never called then).
    fn ask_release(&self, resource: &str) -> impl Future<Output = Option<bool>> + Send {
        let _ = resource;
        std::future::ready(None)
    }

    /// Whether the lock can ask holders to let go ([`Self::ask_release`]).
    fn asks(&self) -> bool {
        false
    }
}

/// How recently a kept hold's renewal makes it the one to oust: a lock
/// that learns of a loss only at its next renewal then learns most of a
/// renewal period late.
const RENEWED_LATELY: Duration = Duration::from_millis(300);

/// How long the operator's ask waits for the resource to be free: a
/// cooperative holder lets go within a round trip or two.
pub const ASK_WAIT: Duration = Duration::from_millis(500);

/// The operator of a lock that has none: a plan with an operator then
/// stops as a setup failure, and one without never calls it.
#[derive(Debug, Clone, Copy)]
pub enum NoOperator {}

impl TortureOperator for NoOperator {
    async fn inspect(&self, _resource: &str) -> Option<Inspected> {
        match *self {}
    }

    async fn force_release(&self, _resource: &str) -> Option<u64> {
        match *self {}
    }
}

/// Calls at `pace` on the resources in turn until `finished`, into `log`.
pub(crate) async fn operate<O: TortureOperator>(
    operator: O,
    resources: Vec<String>,
    pace: OperatorPace,
    history: History,
    log: OperatorLog,
    finished: Arc<AtomicBool>,
) {
    let sightings = Sightings::default();
    let mut aim = false;
    let inspect = every(pace.inspect_every, &resources, &finished, |in_turn| {
        let (operator, history, log, sightings) = (&operator, &history, &log, &sightings);
        aim = !aim;
        let aimed = aim.then(|| history.take_latest_release()).flatten();
        async move {
            let resource = aimed.unwrap_or(in_turn);
            let start = history.now();
            let Some(Inspected {
                holders,
                answered,
                reported,
            }) = operator.inspect(&resource).await
            else {
                return;
            };
            sightings.saw(&resource, &holders, start);
            log.record(OperatorCall {
                resource,
                start,
                end: history.now(),
                action: OperatorAction::Inspect {
                    holders,
                    answered,
                    reported: Some(reported),
                },
            });
        }
    });
    // At the force-releases' pace, an ask of the newest kept hold settled,
    // of two or more: the force-releases oust the oldest, and an ask
    // must not take every kept hold from them.
    let ask = every(
        pace.force_release_every.filter(|_| operator.asks()),
        &resources,
        &finished,
        |_| {
            let (operator, history, log) = (&operator, &history, &log);
            let kept = (history.now().checked_sub(KEPT_SETTLED))
                .and_then(|settled| history.kept_holds().newest_of_two(settled));
            async move {
                let Some(resource) = kept else { return };
                let asked = async {
                    OperatorAction::Ask {
                        freed: operator.ask_release(&resource).await,
                    }
                };
                recorded(history, log, &resource, asked).await;
            }
        },
    );
    let mut at_kept = false;
    let force = every(pace.force_release_every, &resources, &finished, |in_turn| {
        let (operator, history, log, sightings) = (&operator, &history, &log, &sightings);
        at_kept = !at_kept;
        let now = history.now();
        let kept = (now.checked_sub(KEPT_SETTLED))
            .filter(|_| at_kept)
            .and_then(|settled| {
                let lately = now.saturating_sub(RENEWED_LATELY);
                history.kept_holds().to_oust(settled, lately)
            });
        async move {
            let resource = kept.unwrap_or_else(|| sightings.take_stuck().unwrap_or(in_turn));
            let forced = async {
                OperatorAction::ForceRelease {
                    fence: operator.force_release(&resource).await,
                }
            };
            recorded(history, log, &resource, forced).await;
        }
    });
    tokio::join!(inspect, force, ask);
}

/// Makes `call` on `resource` and records it in `log` with its interval
/// and what it did.
async fn recorded(
    history: &History,
    log: &OperatorLog,
    resource: &str,
    call: impl Future<Output = OperatorAction>,
) {
    let start = history.now();
    let action = call.await;
    log.record(OperatorCall {
        resource: resource.to_owned(),
        start,
        end: history.now(),
        action,
    });
}

/// Runs `call` on each resource in turn, one every `period`, until `finished`.
async fn every<F, Fut>(
    period: Option<Duration>,
    resources: &[String],
    finished: &AtomicBool,
    mut call: F,
) where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = ()>,
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
