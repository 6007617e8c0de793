//! The first attempts of exclusive waiters on one key, one at a time.
//!
//! Local waiters on a key line up once someone waits on it
//! (wait/waiters.rs), but the callers that start waiting at the same moment
//! (a pool of workers starting together) find no line yet: each sends its
//! first attempt, and all but one fail, at a quorum's worth of requests
//! each. So a blocking exclusive acquire of one key first passes this
//! key's gate: one first attempt at a time in this process. A first
//! attempt that won marks the gate held until its release (or its TTL,
//! should the hold end another way), and a caller that passes meanwhile
//! lines up at once to wait for that release instead of trying against it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::sync::lock;

/// Every key's gate, while someone holds or waits for it, or a hold that
/// won through it may be live.
#[derive(Debug, Default)]
pub(crate) struct FirstTries {
    gates: Arc<Mutex<Gates>>,
}

#[derive(Debug, Default)]
struct Gates {
    by_key: HashMap<String, Gate>,
    /// Past this many gates, those of holds that ended unreleased go.
    sweep_above: usize,
}

#[derive(Debug)]
struct Gate {
    /// One permit: the right to send a first attempt.
    turn: Arc<Semaphore>,
    /// Until when the hold a first attempt won may be live (its TTL);
    /// `None` once released.
    held_until: Arc<Mutex<Option<Instant>>>,
    /// Callers holding or waiting for the turn.
    users: usize,
}

impl Gate {
    fn is_unused(&self, now: Instant) -> bool {
        self.users == 0 && !is_held(&self.held_until, now)
    }
}

fn is_held(until: &Mutex<Option<Instant>>, now: Instant) -> bool {
    lock(until).is_some_and(|until| now < until)
}

/// What passing a key's gate gave ([`FirstTries::pass`]).
#[derive(Debug)]
pub(crate) enum Passed {
    /// This caller may send its first attempt: tell [`Turn::won`] if it won.
    Try(Turn),
    /// A first attempt before won, and its hold is not known to have
    /// ended: wait for its release in the key's line.
    HeldHere(HeldHere),
    /// The wait ran out at the gate: try once (the caller's last attempt).
    Late,
}

/// The right to send a key's first attempt; the next caller at the gate
/// passes when it is dropped.
#[derive(Debug)]
pub(crate) struct Turn {
    held_until: Arc<Mutex<Option<Instant>>>,
    _permit: OwnedSemaphorePermit,
    _user: User,
}

impl Turn {
    /// The attempt won a hold that lasts until `until` at most (unless
    /// extended): callers passing the gate before its release wait for it.
    pub(crate) fn won(self, until: Instant) {
        *lock(&self.held_until) = Some(until);
    }
}

/// A caller that passed while a hold won at the gate was live, until it
/// listens in the key's line.
#[derive(Debug)]
pub(crate) struct HeldHere {
    held_until: Arc<Mutex<Option<Instant>>>,
    _user: User,
}

impl HeldHere {
    /// The hold is not known to have ended yet: a caller that joined the
    /// key's line first will be woken by its release.
    pub(crate) fn still_held(&self) -> bool {
        is_held(&self.held_until, Instant::now())
    }
}

/// One caller at a key's gate.
#[derive(Debug)]
struct User {
    gates: Arc<Mutex<Gates>>,
    key: String,
}

impl Drop for User {
    fn drop(&mut self) {
        let mut gates = lock(&self.gates);
        if let Some(gate) = gates.by_key.get_mut(&self.key) {
            gate.users -= 1;
            if gate.is_unused(Instant::now()) {
                gates.by_key.remove(&self.key);
            }
        }
    }
}

impl FirstTries {
    /// Waits (until `deadline`) for the turn to send a first attempt on `key`.
    pub(crate) async fn pass(&self, key: &str, deadline: Instant) -> Passed {
        let (turn, held_until) = {
            let mut gates = lock(&self.gates);
            let gates = &mut *gates;
            if gates.by_key.len() > gates.sweep_above {
                let now = Instant::now();
                gates.by_key.retain(|_, gate| !gate.is_unused(now));
                gates.sweep_above = 2 * gates.by_key.len() + 64;
            }
            let gate = gates.by_key.entry(key.to_owned()).or_insert_with(|| Gate {
                turn: Arc::new(Semaphore::new(1)),
                held_until: Arc::default(),
                users: 0,
            });
            gate.users += 1;
            (Arc::clone(&gate.turn), Arc::clone(&gate.held_until))
        };
        let user = User {
            gates: Arc::clone(&self.gates),
            key: key.to_owned(),
        };
        let Ok(Ok(permit)) = tokio::time::timeout_at(deadline.into(), turn.acquire_owned()).await
        else {
            return Passed::Late;
        };
        if is_held(&held_until, Instant::now()) {
            return Passed::HeldHere(HeldHere {
                held_until,
                _user: user,
            });
        }
        Passed::Try(Turn {
            held_until,
            _permit: permit,
            _user: user,
        })
    }

    /// A hold of `key` from this process was released: callers passing its
    /// gate try instead of waiting for that release.
    pub(crate) fn released(&self, key: &str) {
        let mut gates = lock(&self.gates);
        if let Some(gate) = gates.by_key.get_mut(key) {
            *lock(&gate.held_until) = None;
            if gate.users == 0 {
                gates.by_key.remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[tokio::test]
    async fn callers_pass_one_at_a_time_and_after_a_win_wait_for_its_release() {
        let tries = FirstTries::default();
        let Passed::Try(first) = tries.pass("k", later()).await else {
            panic!("the first caller tries");
        };
        let second = tries.pass("k", later());
        let mut second = std::pin::pin!(second);
        assert!(
            futures::poll!(second.as_mut()).is_pending(),
            "one first attempt at a time"
        );
        let Passed::Try(other_key) = tries.pass("other", later()).await else {
            panic!("another key has its own gate");
        };
        drop(other_key);
        first.won(later());
        let Passed::HeldHere(held) = second.await else {
            panic!("after a win, the next caller waits for its release");
        };
        assert!(held.still_held());
        drop(held);
        // The hold outlives its callers at the gate: a later one lines up too.
        assert!(matches!(
            tries.pass("k", later()).await,
            Passed::HeldHere(_)
        ));
        let Passed::HeldHere(held) = tries.pass("k", later()).await else {
            panic!("still held");
        };
        tries.released("k");
        assert!(!held.still_held(), "released while it joined the line");
        drop(held);
        // Released, nobody at the gate: it is gone, and the next caller tries.
        assert!(lock(&tries.gates).by_key.is_empty());
        assert!(matches!(tries.pass("k", later()).await, Passed::Try(_)));
    }

    #[tokio::test]
    async fn after_a_failed_attempt_the_next_caller_tries_and_a_late_one_tries_once() {
        let tries = FirstTries::default();
        let Passed::Try(first) = tries.pass("k", later()).await else {
            panic!("the first caller tries");
        };
        let late = tries
            .pass("k", Instant::now() + Duration::from_millis(20))
            .await;
        assert!(matches!(late, Passed::Late));
        let second = tries.pass("k", later());
        drop(first);
        assert!(matches!(second.await, Passed::Try(_)));
    }

    #[tokio::test]
    async fn a_hold_that_ended_unreleased_stops_holding_up_callers_at_its_ttl() {
        let tries = FirstTries::default();
        let Passed::Try(first) = tries.pass("k", later()).await else {
            panic!("the first caller tries");
        };
        first.won(Instant::now() + Duration::from_millis(30));
        assert!(matches!(
            tries.pass("k", later()).await,
            Passed::HeldHere(_)
        ));
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert!(matches!(tries.pass("k", later()).await, Passed::Try(_)));
        // Gates of such holds go once there are many.
        for i in 0..200 {
            let Passed::Try(turn) = tries.pass(&format!("k{i}"), later()).await else {
                panic!("a new key");
            };
            turn.won(Instant::now());
        }
        assert!(lock(&tries.gates).by_key.len() <= 2 * 64 + 64);
    }
}
