//! The `rslock` crate (0.10) under the harness's torture: a [`TortureLock`]
//! whose client groups each drive one `rslock::LockManager` on the group's
//! proxied nodes, the way its users call it (`lock`, `extend`, `unlock`).
//!
//! What rslock tells its users, read from its source (`src/lock.rs`):
//! `Lock::validity_time` is `ttl - (ttl × 0.01 + 2 ms) - elapsed`, in ms,
//! where `elapsed` counts from the start of the attempt that won (each
//! retry restarts it). So each attempt here is one `lock` call (retry
//! count 1) and the deadline counts from just before that call: never
//! later than rslock's own start. Between attempts it sleeps as rslock
//! does (a random 0–200 ms), for at most the run's wait, `ttl / 2`, as
//! the library's torture lock waits. Its lock value (20 random bytes) is
//! the owner, read as the key audit reads a string key's value (lossy
//! UTF-8), and its resource names are the run's lock keys
//! (`<prefix>{r0}`), so the audit and the leak check read its keys.
//! It has no fencing token, so it runs against an unfenced store.

use std::time::{Duration, Instant};

use rand::Rng;
use redquorum_harness::{Grant, Locker, NoOperator, Refusal, TortureLock, TorturePlan};
use rslock::{LockError, LockManager};

/// rslock's own delay between attempts: a random 0–200 ms (`DEFAULT_RETRY_DELAY`).
const RETRY_DELAY: Duration = Duration::from_millis(200);

/// The rslock crate as the lock under torture.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rslock;

impl TortureLock for Rslock {
    type Locker = RslockLocker;
    type Operator = NoOperator;

    fn name(&self) -> String {
        "rslock".to_owned()
    }

    async fn prepare(_: &TorturePlan<Self>, urls: Vec<String>, _: &str) -> Result<(), String> {
        // rslock connects lazily and waits for nothing (no delayed-restart
        // rule): all there is to check is that it takes the URLs.
        if let Some(bad) = urls.iter().find(|u| !u.starts_with("redis://")) {
            return Err(format!("rslock takes redis:// URLs, not {bad}"));
        }
        Ok(())
    }

    fn locker(plan: &TorturePlan<Self>, _: usize, urls: Vec<String>, prefix: &str) -> RslockLocker {
        let mut manager = LockManager::new(urls);
        // One attempt per `lock` call: the retries are ours (below), so the
        // deadline counts from the attempt that won.
        manager.set_retry(1, RETRY_DELAY);
        RslockLocker {
            manager,
            prefix: prefix.to_owned(),
            ttl: plan.ttl,
            wait: plan.ttl / 2,
        }
    }
}

/// One client group's rslock `LockManager`.
#[derive(Debug)]
pub(crate) struct RslockLocker {
    manager: LockManager,
    prefix: String,
    ttl: Duration,
    wait: Duration,
}

impl RslockLocker {
    /// The lock key of `resource`, in the run's key layout.
    fn key(&self, resource: &str) -> String {
        format!("{}{{{resource}}}", self.prefix)
    }
}

/// A refusal kind for rslock's error. `Unavailable` is any attempt short
/// of a quorum (taken elsewhere or nodes down: rslock does not say which).
fn refusal(error: &LockError) -> Refusal {
    let kind = match error {
        LockError::Unavailable => "contended",
        LockError::TtlExceeded => "expired",
        _ => "other",
    };
    Refusal::new(kind, error.to_string())
}

/// The instant `validity_ms` after `start`.
fn deadline(start: Instant, validity_ms: usize) -> Instant {
    start + Duration::from_millis(validity_ms as u64)
}

impl Locker for RslockLocker {
    type Held = rslock::Lock;

    async fn acquire(&self, resource: &str) -> Result<Grant<rslock::Lock>, Refusal> {
        let key = self.key(resource);
        let give_up = Instant::now() + self.wait;
        loop {
            let start = Instant::now();
            match self.manager.lock(key.as_bytes(), self.ttl).await {
                Ok(lock) => {
                    let owner = String::from_utf8_lossy(&lock.val).into_owned();
                    let until = deadline(start, lock.validity_time);
                    return Ok(Grant::new(lock, owner, until).with_kind("plain", None));
                }
                Err(error) => {
                    let pause = rand::thread_rng().gen_range(Duration::ZERO..RETRY_DELAY);
                    if Instant::now() + pause >= give_up {
                        return Err(refusal(&error));
                    }
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }

    async fn extend(&self, held: &mut rslock::Lock) -> Result<Instant, Refusal> {
        // rslock's extend is an attempt like its lock (validity from its
        // start); short of a quorum it unlocks everywhere.
        let start = Instant::now();
        let extended = self
            .manager
            .extend(held, self.ttl)
            .await
            .map_err(|e| refusal(&e))?;
        let until = deadline(start, extended.validity_time);
        *held = extended;
        Ok(until)
    }

    async fn release(&self, held: rslock::Lock) -> Result<(), String> {
        self.manager.unlock(&held).await;
        // It returns nothing, so no release is confirmed to the checker
        // (`Session::released` stays empty: the key is left to its TTL).
        Err("rslock's unlock does not say which nodes removed the hold".to_owned())
    }

    fn client_commands(&self) -> &'static [&'static str] {
        &["set", "evalsha", "eval", "script|load"]
    }
}
