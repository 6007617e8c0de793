//! `TortureLock`: the caller's side of a torture run. The harness does not
//! know the lock library (it cannot depend on it), so the plan's `lock`
//! says how to build it: once up front to check the configuration and
//! wait until fresh nodes grant, then one [`Locker`] per client group on
//! that group's proxied nodes, and an operator when the plan has one.

use std::future::Future;
use std::time::Duration;

use super::locker::Locker;
use super::operator::TortureOperator;
use super::plan::TorturePlan;

/// How a torture run builds the lock under test, from its plan (`plan.lock`
/// is `self`): every method gets the proxied URLs of the nodes it must
/// use and the key prefix of the run's lock keys (the key audit and the
/// leak check read keys under it, fence counters ending in `:fence`
/// excepted).
///
/// # Examples
///
/// A lock local to the process (it writes no keys, so the audit sees none):
///
/// ```
/// use std::time::{Duration, Instant};
/// use redquorum_harness::{Grant, Locker, NoOperator, Refusal, TortureLock, TorturePlan};
///
/// #[derive(Debug, Clone)]
/// struct Local;
/// struct LocalLocker;
/// impl Locker for LocalLocker {
///     type Held = ();
///     async fn acquire(&self, _resource: &str) -> Result<Grant<()>, Refusal> {
///         Err(Refusal::new("contended", "always"))
///     }
///     async fn release(&self, _held: ()) -> Result<(), String> {
///         Ok(())
///     }
/// }
/// impl TortureLock for Local {
///     type Locker = LocalLocker;
///     type Operator = NoOperator;
///     fn name(&self) -> String {
///         "local".into()
///     }
///     async fn prepare(_: &TorturePlan<Self>, _: Vec<String>, _: &str) -> Result<(), String> {
///         Ok(())
///     }
///     fn locker(_: &TorturePlan<Self>, _: usize, _: Vec<String>, _: &str) -> LocalLocker {
///         LocalLocker
///     }
/// }
/// let plan = TorturePlan::new(Local);
/// assert_eq!(plan.lock.name(), "local");
/// ```
pub trait TortureLock: Clone + Send + Sync + 'static {
    /// The lock one client group drives.
    type Locker: Locker;
    /// The operator's calls, when the plan has an operator
    /// ([`NoOperator`](crate::NoOperator) for a lock without one).
    type Operator: TortureOperator;

    /// The lock's name in the saved run (`RunInfo::lock_kind`).
    fn name(&self) -> String;

    /// Called once before the clients start, with the first group's
    /// proxied URLs: builds the lock to check its configuration (an error
    /// stops the run as a setup failure) and waits until it can grant (for
    /// example until fresh nodes count, under the delayed-restart rule:
    /// [`TorturePlan::delayed_restart`]).
    ///
    /// # Errors
    ///
    /// Why the lock cannot be built.
    fn prepare(
        plan: &TorturePlan<Self>,
        urls: Vec<String>,
        prefix: &str,
    ) -> impl Future<Output = Result<(), String>> + Send;

    /// Client group `group`'s lock, on its proxied `urls`; called on the
    /// group's own runtime. The same configuration passed
    /// [`prepare`](Self::prepare).
    fn locker(
        plan: &TorturePlan<Self>,
        group: usize,
        urls: Vec<String>,
        prefix: &str,
    ) -> Self::Locker;

    /// A short label of client group `group`'s lock configuration, for the
    /// report's row per configuration (`RunInfo::configurations`). By
    /// default empty: every group alike.
    fn configuration(plan: &TorturePlan<Self>, group: usize) -> String {
        let _ = (plan, group);
        String::new()
    }

    /// The TTL client group `group`'s locks take: the key audit dates its
    /// keys by it (a key's age is its TTL less its PTTL). By default the
    /// plan's.
    fn group_ttl(plan: &TorturePlan<Self>, group: usize) -> Duration {
        let _ = group;
        plan.ttl
    }

    /// The operator, on the first group's proxied `urls` (its faults hit
    /// it too); called only when the plan's
    /// [`operator`](TorturePlan::operator) is not idle. By default: none.
    ///
    /// # Errors
    ///
    /// Why it cannot be built (the run stops as a setup failure).
    fn operator(
        plan: &TorturePlan<Self>,
        urls: Vec<String>,
        prefix: &str,
    ) -> Result<Self::Operator, String> {
        let _ = (plan, urls, prefix);
        Err("this lock has no operator".to_owned())
    }
}
