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
