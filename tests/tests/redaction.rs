//! Passwords never appear in Debug, Display, errors or logs, whatever happens to the nodes.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::cluster;
use redquorum::Redlock;

const PASSWORD: &str = "Pw-4b9e-Zq-redact";

/// Everything every tracing event and span writes, at every level, in this test binary.
fn logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    Arc::clone(LOGS.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buffer);
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
            .with_ansi(false)
            .with_writer(move || SharedWriter(Arc::clone(&sink)))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        buffer
    }))
}

struct SharedWriter(Arc<Mutex<Vec<u8>>>);

impl Write for SharedWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn assert_no_password(what: &str, text: &str) {
    assert!(!text.contains(PASSWORD), "password in {what}:\n{text}");
}

#[tokio::test]
async fn passwords_stay_out_of_debug_display_errors_and_logs() {
    let logs = logs();
    let cluster = cluster(3);
    let pass = format!(">{PASSWORD}");
    for i in 0..3 {
        cluster
            .command(i, &["ACL", "SETUSER", "locker", "on", &pass, "~*", "+@all"])
            .unwrap();
    }
    let urls: Vec<String> = (0..3)
        .map(|i| format!("redis://locker:{PASSWORD}@127.0.0.1:{}", cluster.port(i)))
        .collect();
    let builder = Redlock::builder()
        .nodes(&urls)
        .ttl(Duration::from_secs(2))
        .node_timeout(Duration::from_millis(100))
        .wait(Duration::from_millis(300));
    assert_no_password("builder Debug", &format!("{builder:?}"));
    let redlock = builder.build().unwrap();
    assert_no_password("Redlock Debug", &format!("{redlock:?}"));

    // the happy path, with every span and event at TRACE
    let mut lock = redlock.lock("redacted").await.unwrap();
    assert_no_password("Lock Debug", &format!("{lock:?}"));
    lock.extend().await.unwrap();
    let contended = redlock.try_lock("redacted").await.unwrap_err();
    assert_no_password("contended error", &format!("{contended} {contended:?}"));
    lock.release().await.unwrap();
    for (node, health) in redlock.health().await {
        assert_no_password("health", &format!("{node} {node:?} {health} {health:?}"));
    }

    // node failures: errors carry fred's errors and node ids, never URLs
    cluster.kill(0).unwrap();
    cluster.kill(1).unwrap();
    let unavailable = redlock.lock("redacted").await.unwrap_err();
    let shown = format!("{unavailable} {unavailable:?}");
    assert!(
        shown.contains(&format!("127.0.0.1:{}", cluster.port(0))),
        "{shown}"
    );
    assert_no_password("unavailable error", &shown);

    // a wrong password is refused without being echoed
    let wrong = format!("{PASSWORD}-wrong");
    let wrong_urls: Vec<String> = urls.iter().map(|u| u.replace(PASSWORD, &wrong)).collect();
    let refused = Redlock::builder()
        .nodes(&wrong_urls)
        .wait(Duration::from_millis(200))
        .build()
        .unwrap()
        .lock("redacted")
        .await
        .unwrap_err();
    assert_no_password("wrong-password error", &format!("{refused} {refused:?}"));

    // build errors show the URL with the password replaced
    let invalid = Redlock::builder()
        .node(format!("redis://locker:{PASSWORD}@127.0.0.1:notaport"))
        .build()
        .unwrap_err();
    let shown = format!("{invalid} {invalid:?}");
    assert!(shown.contains("locker:***@"), "{shown}");
    assert_no_password("build error", &shown);

    let logs = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("redquorum.acquire"),
        "the spans were not captured, so this test would prove nothing:\n{logs}"
    );
    assert_no_password("logs", &logs);
}
