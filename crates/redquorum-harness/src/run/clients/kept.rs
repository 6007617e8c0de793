//! A holder whose lock keeps its lease alive by its own renewal (a
//! watchdog, [`Grant::kept`](crate::run::grant::Grant::kept)): it works a long
//! job and follows the deadline the renewal moves, recording each move as
//! an extension, and stops when the lock says the lease is lost.

use std::time::{Duration, Instant};

use crate::evidence::{Extension, History, Session};
use crate::run::locker::Locker;

/// How often the holder looks at the lease: a renewal whose sending the
/// lock does not tell is recorded at most this late (the checker's window
/// then starts a little later than the lock's, which only makes it shorter).
const LOOK_EVERY: Duration = Duration::from_millis(20);

/// Works `work` on `held`, or until its lease ends; records each renewal
/// the lock made (`extensions`, `renewed`: when it was seen) and moves
/// `deadline` with it. Returns false when the lease ended first (lost, or
/// its deadline passed): the holder then gives up before its write. Asked
/// to let go (the lock's [`Locker::release_asked`]), it stops early and
/// records when (`asked`).
pub(super) async fn work_kept<L: Locker>(
    locker: &L,
    // `&mut`: a shared reference to a hold that need not be `Sync` could
    // not cross the awaits below.
    held: &mut L::Held,
    work: Duration,
    deadline: &mut Instant,
    session: &mut Session,
    history: &History,
) -> bool {
    let end = Instant::now() + work;
    // Ours while it runs: the operator ousts or asks kept holds.
    let kept = (history.kept_holds()).began(session.client, &session.resource, history.now());
    // Listening from the start: an operator may ask it to let go.
    let mut asked = locker.release_asked(&*held);
    // Bounded by time (`end`, the deadline) and, as a backstop, by count.
    let looks = work.as_millis() / LOOK_EVERY.as_millis() + 2;
    for _ in 0..looks {
        let now = Instant::now();
        match locker.deadline(&*held) {
            Some(current) if current > *deadline => {
                // Seen now; the lock's request went out earlier (when the
                // lock says, else now). The revival rule does not judge a
                // hold that renews itself.
                let seen = history.now();
                let sent = locker
                    .renewal_sent(&*held)
                    .map_or(seen, |at| history.at(at));
                session.extensions.push(Extension {
                    at: sent.min(seen),
                    until: history.at(current),
                });
                session.renewed.push(seen);
                kept.renewed(seen);
                *deadline = current;
            }
            // Declared lost: the lock never moves a live lease's deadline back.
            Some(current) if current < *deadline => return false,
            _ => {}
        }
        if now >= end {
            return true;
        }
        if now >= *deadline {
            return false;
        }
        let wake = (now + LOOK_EVERY).min(end).min(*deadline);
        let nap = tokio::time::sleep_until(wake.into());
        let Some(ask) = asked.as_mut() else {
            nap.await;
            continue;
        };
        tokio::select! {
            () = nap => {}
            () = ask => {
                // Cooperative: it stops the job here, writes while its
                // lease holds, and releases.
                session.asked = Some(history.now());
                return Instant::now() < *deadline;
            }
        }
    }
    Instant::now() < *deadline
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::run::grant::Grant;
    use crate::run::locker::Refusal;

    /// A lock whose renewal moves the deadline (first `base` + 10 s) 10 s
    /// on at each look, `moves` times, then keeps it, or reports the lease
    /// lost (a deadline before the first) when it `loses`.
    struct Renewed {
        base: Instant,
        moves: u32,
        loses: bool,
        looks: Mutex<u32>,
    }

    impl Locker for Renewed {
        type Held = ();

        async fn acquire(&self, _resource: &str) -> Result<Grant<()>, Refusal> {
            Err(Refusal::new("other", "not used"))
        }

        async fn release(&self, _held: ()) -> Result<(), String> {
            Ok(())
        }

        fn deadline(&self, _held: &()) -> Option<Instant> {
            let mut looks = self.looks.lock().unwrap();
            *looks += 1;
            Some(if *looks > self.moves && self.loses {
                self.base
            } else {
                self.base + Duration::from_secs(10) * ((*looks).min(self.moves) + 1)
            })
        }
    }

    fn held_until(history: &History, deadline: Instant) -> Session {
        let now = history.now();
        Session::granted(0, "r", "o", now, now, history.at(deadline))
    }

    #[tokio::test]
    async fn each_renewal_is_recorded_until_the_lease_is_lost() {
        let history = History::new();
        let base = Instant::now();
        let locker = Renewed {
            base,
            moves: 3,
            loses: true,
            looks: Mutex::new(0),
        };
        let mut deadline = base + Duration::from_secs(10);
        let mut session = held_until(&history, deadline);
        let work = Duration::from_secs(60);
        let kept = work_kept(
            &locker,
            &mut (),
            work,
            &mut deadline,
            &mut session,
            &history,
        )
        .await;
        assert!(!kept, "a lost lease ends the work");
        let untils: Vec<Duration> = session.extensions.iter().map(|e| e.until).collect();
        let expected: Vec<Duration> = (2..=4)
            .map(|n| history.at(base + Duration::from_secs(10) * n))
            .collect();
        assert_eq!(untils, expected);
        assert_eq!(session.renewed.len(), 3);
        assert_eq!(deadline, base + Duration::from_secs(40));
    }

    #[tokio::test]
    async fn a_lease_never_renewed_is_worked_to_the_end_of_the_job() {
        let history = History::new();
        let locker = Renewed {
            base: Instant::now(),
            moves: 0,
            loses: false,
            looks: Mutex::new(0),
        };
        let mut deadline = locker.base + Duration::from_secs(10);
        let mut session = held_until(&history, deadline);
        let kept = work_kept(
            &locker,
            &mut (),
            Duration::from_millis(50),
            &mut deadline,
            &mut session,
            &history,
        )
        .await;
        assert!(kept && session.extensions.is_empty());
    }
}
