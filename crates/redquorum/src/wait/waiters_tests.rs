//! Unit tests of the lines of waiters (wait/waiters.rs).

use super::*;

#[test]
fn an_empty_line_lingers_then_is_removed() {
    let lines = Arc::new(Lines::default());
    assert!(lines.is_idle());
    let (waiter, opened) = Waiter::join(&lines, &["lock:{a}"], true);
    assert_eq!(opened, ["lock:{a}"]);
    assert!(lines.is_waited_on("lock:{a}") && lines.has_waiters("lock:{a}"));
    drop(waiter);
    assert!(!lines.has_waiters("lock:{a}"));
    // Still there for a returning waiter...
    assert!(lines.remove_idle(Duration::from_secs(3600)).is_empty());
    assert!(lines.is_waited_on("lock:{a}"));
    // ...but not once it has been empty for the linger time.
    assert_eq!(lines.remove_idle(Duration::ZERO), ["lock:{a}"]);
    assert!(lines.is_idle());
}

#[test]
fn a_line_in_use_is_never_removed() {
    let lines = Arc::new(Lines::default());
    let (first, _) = Waiter::join(&lines, &["k"], true);
    let (second, opened) = Waiter::join(&lines, &["k"], true);
    assert!(opened.is_empty());
    drop(first);
    assert!(lines.remove_idle(Duration::ZERO).is_empty());
    drop(second);
    assert_eq!(lines.remove_idle(Duration::ZERO), ["k"]);
}

/// A listener busy between two waits (a watchdog extending on the
/// first node's announcement) must not miss the next ones: a wake that
/// came while nobody waited ends the next wait at once.
#[tokio::test]
async fn a_wake_while_the_listener_was_not_waiting_ends_its_next_wait() {
    let lines = Arc::new(Lines::default());
    let (mut listener, _) = Waiter::join(&lines, &["k:lost"], false);
    lines.released("k:lost", None);
    let far = Instant::now() + Duration::from_secs(60);
    let woke = tokio::time::timeout(
        Duration::from_secs(5),
        listener.wait(Duration::from_secs(60), far),
    )
    .await;
    assert!(woke.is_ok(), "the wake between two waits was lost");
    // Taken: the wait after it waits for a new one.
    let again = tokio::time::timeout(
        Duration::from_millis(50),
        listener.wait(Duration::from_secs(60), far),
    )
    .await;
    assert!(again.is_err(), "one wake ended two waits");
}

#[tokio::test]
async fn a_listener_on_several_keys_wakes_on_a_release_of_any() {
    let lines = Arc::new(Lines::default());
    let (mut listener, opened) = Waiter::join(&lines, &["a", "b"], false);
    assert_eq!(opened.len(), 2);
    let far = Instant::now() + Duration::from_secs(60);
    let waiting = listener.wait(Duration::from_secs(60), far);
    let release = async {
        tokio::task::yield_now().await;
        lines.released("b", Some(b"token"));
    };
    let (woken, ()) = tokio::join!(
        tokio::time::timeout(Duration::from_secs(5), waiting),
        release
    );
    assert!(woken.is_ok(), "the release of b did not wake the listener");
}

#[test]
fn each_release_is_counted_once_across_node_copies() {
    let mut recent = Recent::default();
    assert!(recent.is_new(b"a"));
    assert!(!recent.is_new(b"a"));
    assert!(recent.is_new(b"b"));
    assert!(!recent.is_new(b"a"));
    for t in [b"c", b"d", b"e"] {
        assert!(recent.is_new(t));
    }
    // "a" has left the window of RECENT tokens: a new release with the same
    // token is impossible (tokens are random), but it must not be refused forever.
    assert!(recent.is_new(b"a"));
}

/// The head of `key`'s line, waiting for a release (the previous head won
/// the lock); its task says the attempt is sent as soon as a release wakes
/// it, and returns whether one did.
async fn head_waiting_for_a_release(
    lines: &Arc<Lines>,
    key: &str,
) -> tokio::task::JoinHandle<bool> {
    let (mut head, _) = Waiter::join(lines, &[key], true);
    lock(&lines.map)[key]
        .handed_over
        .store(true, Ordering::Release);
    let task = tokio::spawn(async move {
        let far = Instant::now() + Duration::from_secs(60);
        let woken = head.wait(Duration::from_secs(60), far).await;
        if woken {
            head.attempt_sent();
        }
        woken
    });
    let line = Arc::clone(&lock(&lines.map)[key]);
    // The task may run on another thread, late on a loaded machine.
    let give_up = Instant::now() + Duration::from_secs(30);
    while Instant::now() < give_up {
        if line.head_waiting.load(Ordering::Acquire) {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("the head never waited for a release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_release_waits_for_the_head_it_woke_to_send_its_attempt() {
    let lines = Arc::new(Lines::default());
    let head = head_waiting_for_a_release(&lines, "k").await;
    let joining = lines.released_locally("k", b"t1").expect("a head waited");
    let sent = tokio::time::timeout(
        Duration::from_secs(5),
        joining.attempt_sent(Duration::from_secs(60)),
    )
    .await;
    assert_eq!(sent, Ok(true), "the woken head's attempt was not heard");
    assert!(head.await.unwrap(), "the head was not woken by the release");
}

#[tokio::test]
async fn a_release_with_no_head_waiting_for_it_waits_for_nobody() {
    let lines = Arc::new(Lines::default());
    assert!(lines.released_locally("k", b"t1").is_none(), "no line");
    let (mut listener, _) = Waiter::join(&lines, &["k"], false);
    assert!(lines.released_locally("k", b"t2").is_none(), "a listener");
    assert!(listener.wait(Duration::from_secs(60), Instant::now()).await);
    // Another node's copy of a release already counted wakes nobody.
    let head = head_waiting_for_a_release(&lines, "j").await;
    assert!(lines.released_locally("j", b"t3").is_some());
    assert!(lines.released_locally("j", b"t3").is_none());
    assert!(head.await.unwrap());
}

#[tokio::test]
async fn a_head_that_never_sends_costs_the_release_only_the_bound() {
    let lines = Arc::new(Lines::default());
    let (mut head, _) = Waiter::join(&lines, &["k"], true);
    lock(&lines.map)["k"]
        .handed_over
        .store(true, Ordering::Release);
    let far = Instant::now() + Duration::from_secs(60);
    let mut waiting = std::pin::pin!(head.wait(Duration::from_secs(60), far));
    assert!(futures::poll!(waiting.as_mut()).is_pending());
    // A late signal of an earlier head must not end this release's wait.
    lock(&lines.map)["k"].attempt_sent.notify_one();
    let joining = lines.released_locally("k", b"t1").expect("a head waited");
    // The head is woken but never says its attempt is sent.
    assert!(!joining.attempt_sent(Duration::from_millis(1)).await);
}

#[tokio::test]
async fn a_head_whose_wait_was_cancelled_is_not_waited_for() {
    let lines = Arc::new(Lines::default());
    let (mut head, _) = Waiter::join(&lines, &["k"], true);
    lock(&lines.map)["k"]
        .handed_over
        .store(true, Ordering::Release);
    let far = Instant::now() + Duration::from_secs(60);
    {
        let mut waiting = std::pin::pin!(head.wait(Duration::from_secs(60), far));
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        assert!(lock(&lines.map)["k"].head_waiting.load(Ordering::Acquire));
    }
    // Its acquire was dropped mid-wait: a release must not wait for it.
    assert!(lines.released_locally("k", b"t1").is_none());
}
