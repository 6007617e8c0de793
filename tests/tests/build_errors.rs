//! Every `BuildError` variant, produced from bad input (never a panic).

use std::time::Duration;

use redquorum::{BuildError, Redlock};

const A: &str = "redis://127.0.0.1:7001";
const B: &str = "redis://127.0.0.1:7002";
const C: &str = "redis://127.0.0.1:7003";

fn build(builder: redquorum::RedlockBuilder) -> BuildError {
    builder
        .build()
        .expect_err("configuration should be refused")
}

#[tokio::test]
async fn no_nodes_is_refused() {
    assert!(matches!(build(Redlock::builder()), BuildError::NoNodes));
}

#[tokio::test]
async fn an_even_node_count_is_refused() {
    assert!(matches!(
        build(Redlock::builder().nodes([A, B])),
        BuildError::EvenNodeCount(2)
    ));
}

#[tokio::test]
async fn a_duplicate_node_is_refused_even_with_other_credentials() {
    let err = build(Redlock::builder().nodes([A, "redis://user:pw@127.0.0.1:7001", C]));
    let BuildError::DuplicateNode(node) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(node.to_string(), "127.0.0.1:7001");
}

#[tokio::test]
async fn a_malformed_url_is_refused_without_showing_its_password() {
    for url in [
        "not a url",
        "redis://user:hunter2@",
        "http://user:hunter2@host:1",
        "redis://user:hunter2@host:notaport",
    ] {
        let err = build(Redlock::builder().nodes([url, B, C]));
        assert!(
            matches!(err, BuildError::InvalidUrl { .. }),
            "{url}: {err:?}"
        );
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(!format!("{err:?}").contains("hunter2"), "{err:?}");
    }
}

/// A URL that parses but does not name one master exactly is refused at
/// `build()`, before anything connects: fred would assume port 6379, take
/// port 0, and ignore an unknown parameter, a cluster URL's path and a
/// fragment. One line naming the problem and the node, never its password.
#[tokio::test]
async fn a_url_with_no_port_port_0_an_unknown_parameter_a_path_or_a_fragment_is_refused() {
    for (url, problem) in [
        ("redis-cluster://u:hunter2@127.0.0.1", "no port"),
        ("rediss-cluster://127.0.0.1", "no port"),
        ("redis://u:hunter2@127.0.0.1", "no port"),
        ("redis-cluster://127.0.0.1:0", "port 0"),
        ("redis://u:hunter2@127.0.0.1:0", "port 0"),
        (
            "redis-cluster://u:hunter2@127.0.0.1:7001?bogus=1",
            "unknown query parameter \"bogus\"",
        ),
        (
            "rediss-cluster://127.0.0.1:7001?node=127.0.0.1:7002&bogus=1",
            "unknown query parameter \"bogus\"",
        ),
        (
            "redis://127.0.0.1:7001?node=127.0.0.1:7002",
            "unknown query parameter \"node\"",
        ),
        (
            "redis-cluster://127.0.0.1:7001?node=127.0.0.1:0",
            "seed \"127.0.0.1:0\"",
        ),
        (
            "redis-cluster://127.0.0.1:7001?node=:7002",
            "seed \":7002\"",
        ),
        (
            "redis-cluster://u:hunter2@127.0.0.1:7001/abc",
            "path \"/abc\"",
        ),
        ("redis-cluster://127.0.0.1:7001/0", "path \"/0\""),
        ("redis://u:hunter2@127.0.0.1:7001/abc", "path \"/abc\""),
        (
            "redis-cluster://u:hunter2@127.0.0.1:7001#fragment",
            "#fragment",
        ),
        ("redis://127.0.0.1:7001/0#x", "#fragment"),
    ] {
        let err = build(Redlock::builder().nodes([url, B, C]));
        assert!(
            matches!(err, BuildError::MalformedUrl { .. }),
            "{url}: {err:?}"
        );
        let text = err.to_string();
        let node = url.replace("hunter2", "***");
        let node = node
            .split(['?', '#', '/'])
            .take(3)
            .collect::<Vec<_>>()
            .join("/");
        assert!(
            text.starts_with(&format!("invalid node url {node}")),
            "{url}: {text}"
        );
        assert!(text.contains(problem), "{url}: no {problem:?} in {text}");
        assert!(!text.contains('\n'), "{url}: {text}");
        assert!(
            !format!("{text}{err:?}").contains("hunter2"),
            "{url}: {err:?}"
        );
    }
    // What each scheme takes: a database path on a single server, seeds on a
    // cluster, an empty path, an empty query.
    Redlock::builder()
        .nodes([
            "redis://u:pw@127.0.0.1:7001/2",
            "redis-cluster://127.0.0.1:7002/?node=127.0.0.1:7012&node=localhost:7022",
            "redis://127.0.0.1:7003/?",
        ])
        .build()
        .unwrap();
}

#[tokio::test]
async fn a_sentinel_url_is_refused_as_a_node_and_a_cluster_url_is_one_node() {
    let err = build(Redlock::builder().nodes(["redis-sentinel://127.0.0.1:26379", B, C]));
    assert!(matches!(err, BuildError::InvalidUrl { .. }), "{err:?}");
    // A cluster master (docs/locks.md): one node, named by its first seed,
    // beside single servers; the same seed twice is a duplicate.
    let redlock = Redlock::builder()
        .nodes(["redis-cluster://127.0.0.1:7001?node=127.0.0.1:7011", B, C])
        .build()
        .unwrap();
    let names: Vec<String> = redlock.nodes().map(ToString::to_string).collect();
    assert_eq!(
        names,
        ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"]
    );
    let err = build(Redlock::builder().nodes(["redis-cluster://127.0.0.1:7001", A, C]));
    assert!(matches!(err, BuildError::DuplicateNode(_)), "{err:?}");
}

#[tokio::test]
async fn a_zero_ttl_is_refused() {
    assert!(matches!(
        build(Redlock::builder().nodes([A, B, C]).ttl(Duration::ZERO)),
        BuildError::ZeroTtl
    ));
}

#[tokio::test]
async fn a_node_timeout_not_below_the_ttl_is_refused() {
    let err = build(
        Redlock::builder()
            .nodes([A, B, C])
            .ttl(Duration::from_millis(100))
            .node_timeout(Duration::from_millis(100)),
    );
    assert!(
        matches!(err, BuildError::NodeTimeoutNotBelowTtl { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_zero_node_timeout_is_refused() {
    let err = build(
        Redlock::builder()
            .nodes([A, B, C])
            .node_timeout(Duration::ZERO),
    );
    assert!(matches!(err, BuildError::ZeroNodeTimeout), "{err:?}");
}

#[tokio::test]
async fn a_drift_factor_out_of_range_is_refused() {
    for factor in [-0.01, 0.5, 1.0, f64::NAN, f64::INFINITY] {
        let err = build(Redlock::builder().nodes([A, B, C]).drift_factor(factor));
        assert!(
            matches!(err, BuildError::DriftFactorOutOfRange(_)),
            "{factor}: {err:?}"
        );
    }
}

#[test]
fn building_outside_a_runtime_is_an_error_not_a_panic() {
    assert!(matches!(
        build(Redlock::builder().nodes([A, B, C])),
        BuildError::NoRuntime
    ));
}

#[tokio::test]
async fn the_builder_debug_hides_passwords() {
    let builder = Redlock::builder().nodes(["redis://u:hunter2@127.0.0.1:7001", B, C]);
    let shown = format!("{builder:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    let redlock = builder.build().unwrap();
    assert!(!format!("{redlock:?}").contains("hunter2"));
}

#[tokio::test]
async fn tls_roots_without_a_rediss_node_are_refused() {
    // A CA for nodes given as redis://: the connections would be plain text.
    let err = build(
        Redlock::builder()
            .nodes([A, B, C])
            .tls_root_certificate(b"-----BEGIN CERTIFICATE-----"),
    );
    assert!(matches!(err, BuildError::TlsRootsWithoutTls), "{err:?}");
    assert!(err.to_string().contains("rediss://"), "{err}");
}

/// Durations that overflow clock arithmetic or Redis's expiry range are
/// refused when configured, not met later as a panic or "unavailable".
#[tokio::test]
async fn durations_beyond_the_supported_range_are_refused_at_build() {
    let nodes = [
        "redis://127.0.0.1:1",
        "redis://127.0.0.1:2",
        "redis://127.0.0.1:3",
    ];
    let huge = [
        Duration::MAX,
        Duration::from_secs(u64::MAX / 4),
        Duration::from_secs(400 * 86_400),
    ];
    for wait in huge {
        let err = Redlock::builder()
            .nodes(nodes)
            .wait(wait)
            .build()
            .unwrap_err();
        assert!(
            matches!(err, BuildError::WaitOutOfRange { .. }),
            "wait {wait:?}: {err:?}"
        );
    }
    for ttl in huge {
        let err = Redlock::builder()
            .nodes(nodes)
            .ttl(ttl)
            .build()
            .unwrap_err();
        assert!(
            matches!(err, BuildError::TtlOutOfRange { .. }),
            "ttl {ttl:?}: {err:?}"
        );
    }
    let redlock = Redlock::builder().nodes(nodes).build().unwrap();
    let err = redlock
        .with_options(&redquorum::LockOptions {
            wait: Duration::MAX,
            ..Default::default()
        })
        .unwrap_err();
    assert!(matches!(err, BuildError::WaitOutOfRange { .. }), "{err:?}");
}

/// Host names differing only in case name one node.
#[tokio::test]
async fn host_names_are_normalised_so_case_aliases_are_duplicates() {
    let err = Redlock::builder()
        .nodes([
            "redis://localhost:7001",
            "redis://LOCALHOST:7001",
            "redis://127.0.0.1:7002",
        ])
        .build()
        .unwrap_err();
    assert!(matches!(err, BuildError::DuplicateNode(_)), "{err:?}");
}
