//! Asking again for a fencing token that one round could not issue
//! (`Error::FenceUnavailable`: too few nodes took its write-back, e.g.
//! node timeouts under load): the lock is still held, so `exec` and
//! `serve` ask again, a retry delay apart, while the lease is not at risk,
//! for a bounded time.

use std::time::{Duration, Instant};

/// How long and how often to ask again for a token a round could not issue.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FenceRetry {
    /// Between two rounds.
    pub(crate) delay: Duration,
    /// No round starts after this.
    pub(crate) until: Instant,
}

/// `ask()`'s answer, asked again when it is an error `worth_again`
/// accepts, while the lease is not `at_risk` and `retry` allows another
/// round.
pub(crate) async fn ask_again<T, E, F: Future<Output = Result<T, E>>>(
    mut ask: impl FnMut() -> F,
    worth_again: impl Fn(&E) -> bool,
    at_risk: impl Fn() -> bool,
    retry: FenceRetry,
) -> Result<T, E> {
    loop {
        match ask().await {
            Err(e)
                if worth_again(&e) && !at_risk() && Instant::now() + retry.delay < retry.until =>
            {
                tokio::time::sleep(retry.delay).await;
            }
            answer => return answer,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    const NO_QUORUM: &str = "no quorum";

    fn retry(for_: Duration) -> FenceRetry {
        FenceRetry {
            delay: Duration::from_millis(1),
            until: Instant::now() + for_,
        }
    }

    /// Answers `answers` in turn (the last one from then on), counting the rounds.
    fn rounds<'a>(
        answers: &'a [Result<u64, &'static str>],
        count: &'a Cell<usize>,
    ) -> impl FnMut() -> std::future::Ready<Result<u64, &'static str>> + 'a {
        move || {
            count.set(count.get() + 1);
            std::future::ready(answers[(count.get() - 1).min(answers.len() - 1)])
        }
    }

    fn no_quorum(e: &&str) -> bool {
        *e == NO_QUORUM
    }

    #[tokio::test]
    async fn a_round_without_quorum_is_asked_again_until_one_issues_the_token() {
        let count = Cell::new(0);
        let answers = [Err(NO_QUORUM), Err(NO_QUORUM), Ok(7)];
        let ask = rounds(&answers, &count);
        let token = ask_again(ask, no_quorum, || false, retry(Duration::from_secs(60))).await;
        assert_eq!((token, count.get()), (Ok(7), 3));
    }

    #[tokio::test]
    async fn a_lease_at_risk_or_out_of_time_ends_the_asking() {
        let count = Cell::new(0);
        let at_risk = || count.get() == 2;
        let ask = rounds(&[Err(NO_QUORUM)], &count);
        let answer = ask_again(ask, no_quorum, at_risk, retry(Duration::from_secs(60))).await;
        assert_eq!((answer, count.get()), (Err(NO_QUORUM), 2));

        let count = Cell::new(0);
        let ask = rounds(&[Err(NO_QUORUM)], &count);
        let answer = ask_again(ask, no_quorum, || false, retry(Duration::ZERO)).await;
        assert_eq!((answer, count.get()), (Err(NO_QUORUM), 1));
    }

    #[tokio::test]
    async fn another_error_is_not_asked_again() {
        let count = Cell::new(0);
        let ask = rounds(&[Err("lost")], &count);
        let answer = ask_again(ask, no_quorum, || false, retry(Duration::from_secs(60))).await;
        assert_eq!((answer, count.get()), (Err("lost"), 1));
    }
}
