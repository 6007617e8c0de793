//! The command's environment: the resource, the owner token, the fencing
//! token for commands that write to a resource checking it, and what the
//! kind of hold adds. The fencing token is asked of a quorum when the
//! command starts; a round too few nodes took (a node timeout under load)
//! leaves the lock held (`Error::FenceUnavailable`), so it is asked again,
//! a retry delay apart, while the lease is not at risk, for at most one TTL.

use std::time::{Duration, Instant};

use redquorum::Error;

use super::hold::Hold;

/// How long and how often to ask again for a token a round could not issue.
#[derive(Debug, Clone, Copy)]
pub(super) struct FenceRetry {
    /// Between two rounds.
    pub(super) delay: Duration,
    /// No round starts after this.
    pub(super) until: Instant,
}

/// The environment of the command run under `hold`.
pub(super) async fn child_env<H: Hold>(
    hold: &H,
    retry: FenceRetry,
) -> Result<Vec<(&'static str, String)>, Error> {
    let mut env = vec![
        ("REDQUORUM_RESOURCE", hold.resource().to_owned()),
        // Names this hold in `status` and `list`, and in a history's audit.
        ("REDQUORUM_OWNER", hold.owner()),
    ];
    let lease = hold.lease();
    let no_quorum = |e: &Error| matches!(e, Error::FenceUnavailable { .. });
    let token = ask_again(|| hold.fence(), no_quorum, || lease.is_at_risk(), retry).await;
    match token {
        Ok(fence) => env.push(("REDQUORUM_FENCE", fence.to_string())),
        Err(Error::FencingOff { .. }) => {}
        Err(error) => return Err(error),
    }
    env.extend(hold.extra_env());
    Ok(env)
}

/// `ask()`'s answer, asked again when it is an error `worth_again`
/// accepts, while the lease is not `at_risk` and `retry` allows another
/// round.
async fn ask_again<T, E, F: Future<Output = Result<T, E>>>(
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
